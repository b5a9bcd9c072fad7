# syntax=docker/dockerfile:1
# The merchant purchasing service: `docker build -t merchant-purchasing .`, or `docker compose up`
# (docker-compose.yml runs it on PostgreSQL 16).

# ---- build: all dependencies, compile TypeScript, then drop the dev dependencies ----------------
FROM node:20-slim AS build
WORKDIR /app
ENV CI=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

COPY package.json package-lock.json ./
# Scripts are skipped here: `prepare` would compile before the sources are copied, and the
# install scripts that matter at run time have prebuilt platform packages.
# npm ci can refuse a lock file that leaves out other platforms' optional native packages
# (rollup, msgpackr-extract; see .ci/run); then the locked tree is installed with
# `npm install --no-save` and the lock file must come out byte-identical.
RUN sha256sum package.json package-lock.json > /tmp/lock.sha256 \
 && ( npm ci --ignore-scripts \
      || ( rm -rf node_modules && npm install --no-save --ignore-scripts ) ) \
 && sha256sum -c --quiet /tmp/lock.sha256

COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# the bundler (scripts/bundle.mjs) and the cabinet page's sources it builds into dist/cabinet
COPY scripts ./scripts
COPY web ./web
RUN npm run build \
 && npm prune --omit=dev --ignore-scripts

# ---- run -------------------------------------------------------------------------------------------
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    OPS_HOST=0.0.0.0 \
    PORT=8080 \
    OPS_PORT=9090 \
    DATA_DIR=/app/data

COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Plain SQL migrations, applied at start-up (found beside dist/).
COPY migrations ./migrations

# DATA_DIR: the generated admin token (when ADMIN_TOKEN is unset), the full dump files and,
# without DATABASE_URL, the embedded database.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME ["/app/data"]
USER node

# 8080: merchant API (HTTP + WebSocket); 9090: ops listener (/health, /ready, /metrics, /admin).
EXPOSE 8080 9090
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:' + (process.env.OPS_PORT || 9090) + '/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"

# the V8 settings of package.json's start script (README, "Runtime settings")
CMD ["node", "--max-semi-space-size=64", "--min-semi-space-size=16", "--v8-pool-size=1", "--no-memory-reducer", "--expose-gc", "dist/bundle/main.mjs"]
