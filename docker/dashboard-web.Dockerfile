# The dashboard web image: the Next.js app, built for one API, served by
# Next's standalone server as an unprivileged user. Build from the
# repository root, naming the API the browser will call:
#   docker build -f docker/dashboard-web.Dockerfile \
#     --build-arg NEXT_PUBLIC_API_BASE=https://dashboard.example.com/api \
#     -t REGISTRY/levers9/dashboard-web:TAG .
# Without NEXT_PUBLIC_API_BASE the build fails: the content security policy
# names the API (docs/dashboard.md).

ARG NODE_IMAGE=node:22-bookworm-slim

# The packages in their own stage, so a change to the app's sources does
# not refetch them.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY dashboard/web/package.json dashboard/web/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM ${NODE_IMAGE} AS build
# No default on purpose: next.config.mjs refuses to build without it.
ARG NEXT_PUBLIC_API_BASE
ENV NEXT_TELEMETRY_DISABLED=1
WORKDIR /app
COPY --from=deps /app/node_modules node_modules
COPY dashboard/web ./
RUN test -n "$NEXT_PUBLIC_API_BASE" \
   || { echo "NEXT_PUBLIC_API_BASE is not set: pass --build-arg NEXT_PUBLIC_API_BASE=https://dashboard.example.com/api" >&2; exit 1; } \
 && node node_modules/next/dist/bin/next build

# Only what the standalone server traced as needed, not the build's
# node_modules (TypeScript, playwright-core, the compilers).
FROM ${NODE_IMAGE}
ENV NODE_ENV=production NEXT_TELEMETRY_DISABLED=1 PORT=3000 HOSTNAME=0.0.0.0
WORKDIR /app
COPY --from=build /app/.next/standalone ./
COPY --from=build /app/.next/static .next/static
# The app's files stay root's; only Next's cache is the user's to write.
RUN useradd --uid 10001 --user-group --no-create-home --shell /usr/sbin/nologin levers9 \
 && mkdir -p .next/cache && chown 10001:10001 .next/cache
USER 10001:10001
EXPOSE 3000
CMD ["node", "server.js"]
