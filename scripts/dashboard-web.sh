#!/usr/bin/env bash
# The dashboard web app's two jobs, each after installing the packages of
# package-lock.json (npm ci, only when the lock changed since the last
# install):
#   scripts/dashboard-web.sh lint   ESLint (Next's rules), no warning allowed
#   scripts/dashboard-web.sh        builds the app for one API:
#     NEXT_PUBLIC_API_BASE (e.g. https://dashboard.example.com/api) is baked
#     into the build, since the content security policy names it.
set -euo pipefail
cd "$(dirname "$0")/../dashboard/web"
stamp=node_modules/.levers9-package-lock.json
if ! cmp -s package-lock.json "$stamp"; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
if [ "${1:-}" = lint ]; then
  exec node node_modules/eslint/bin/eslint.js --max-warnings 0 .
fi
: "${NEXT_PUBLIC_API_BASE:?set NEXT_PUBLIC_API_BASE to the API the app will talk to}"
export NEXT_TELEMETRY_DISABLED=1
exec node node_modules/next/dist/bin/next build
