# syntax=docker/dockerfile:1
# pressure402 production image. The build needs only package registries (Debian's apt for the C++ toolchain, npm for
# packages): better-sqlite3 compiles against the Node headers that ship in the node image, so nothing is downloaded
# from nodejs.org or GitHub. The runtime stage holds the compiled server, production dependencies and the data.
#
# HEALTHCHECK is a Docker-format instruction: Docker keeps it; buildah and podman drop it from OCI-format images
# (their default), so build there with `--format docker` (scripts/image.sh does).
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
# nodedir: node-gyp uses /usr/local/include/node instead of downloading headers. build_from_source: skip
# prebuild-install's attempt to fetch a prebuilt binary from GitHub (it would fail offline and fall back anyway).
ENV npm_config_nodedir=/usr/local npm_config_build_from_source=true
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY scripts ./scripts
# Production dependencies only: --omit=optional also drops the devnet's anvil binary and TypeScript (an optional peer
# of viem, kept by --omit=dev alone). Then better-sqlite3's build leftovers (objects, static library, SQLite sources):
# only its compiled addon is loaded at run time.
RUN npm run build \
 && npm prune --omit=dev --omit=optional --no-audit --no-fund \
 && find node_modules -type d -empty -delete \
 && cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node /tmp/ \
 && rm -rf build deps src \
 && mkdir -p build/Release \
 && mv /tmp/better_sqlite3.node build/Release/

# Run: production only (a facilitator and PAY_TO are required; the devnet is never started).
FROM ${NODE_IMAGE}
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 LEDGER_PATH=/var/lib/pressure402/ledger.sqlite
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY data ./data
RUN mkdir -p /var/lib/pressure402 && chown node:node /var/lib/pressure402
USER node
VOLUME ["/var/lib/pressure402"]
EXPOSE 3000
# Liveness only (/health): readiness (/ready, which calls the facilitator) is for load balancers, not for restarts.
HEALTHCHECK --interval=30s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/server.js"]
