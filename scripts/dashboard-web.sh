#!/usr/bin/env bash
# Builds the dashboard web app for one API: NEXT_PUBLIC_API_BASE (e.g.
# https://dashboard.example.com/api) is baked into the build, since the
# content security policy names it. Installs the packages of
# package-lock.json first (npm ci), only when the lock changed since the
# last install.
set -euo pipefail
cd "$(dirname "$0")/../dashboard/web"
: "${NEXT_PUBLIC_API_BASE:?set NEXT_PUBLIC_API_BASE to the API the app will talk to}"
stamp=node_modules/.levers9-package-lock.json
if ! cmp -s package-lock.json "$stamp"; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
export NEXT_TELEMETRY_DISABLED=1
exec node node_modules/next/dist/bin/next build
