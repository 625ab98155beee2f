#!/usr/bin/env bash
# Builds the production image, runs it against a devnet on this host, makes one paid call, prints the image size.
#
#   scripts/image.sh              build with docker (if its daemon answers) or buildah (+ podman to run)
#   scripts/image.sh --rehearse   no container runtime: replay the Dockerfile's build steps in a temporary directory
#                                 and run the resulting runtime tree (dist + production node_modules + data) the way
#                                 the image's CMD does; prints the runtime tree's size instead of an image size
#
# Env: IMAGE (default pressure402:local), APP_PORT (default 3402). The container uses the host network so it reaches
# the devnet's 127.0.0.1 addresses (Linux).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
IMAGE=${IMAGE:-pressure402:local}
APP_PORT=${APP_PORT:-3402}
MODE=container
[[ "${1:-}" == "--rehearse" ]] && MODE=rehearse

say() { printf 'image.sh: %s\n' "$*" >&2; }
WORK=$(mktemp -d)
DEVNET_PID=""
APP_PID=""
CONTAINER=""
cleanup() {
  [[ -n "$CONTAINER" ]] && $RUNNER rm -f "$CONTAINER" >/dev/null 2>&1 || true
  [[ -n "$APP_PID" ]] && kill "$APP_PID" 2>/dev/null || true
  [[ -n "$DEVNET_PID" ]] && kill "$DEVNET_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- build ------------------------------------------------------------------------------------------------------
if [[ $MODE == container ]]; then
  if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    BUILDER=docker RUNNER=docker
    docker build -t "$IMAGE" .
  elif command -v buildah >/dev/null; then
    BUILDER=buildah RUNNER=podman
    command -v podman >/dev/null || { say "buildah is here but podman (to run the image) is not"; exit 1; }
    # --format docker: OCI images have no HEALTHCHECK; buildah would drop it with a warning.
    buildah bud --format docker -t "$IMAGE" .
  else
    say "no container builder: docker's daemon does not answer (docker info) and buildah is not installed."
    say "run 'scripts/image.sh --rehearse' to replay the Dockerfile's steps without a container."
    exit 1
  fi
  say "built $IMAGE with $BUILDER"
else
  RUNNER=""
  # The Dockerfile's build stage, step by step, on this machine's Node (the image uses node:22; here: $(node -v)).
  NODEDIR=$(dirname "$(dirname "$(command -v node)")")
  [[ -f "$NODEDIR/include/node/node_api.h" ]] || { say "no Node headers under $NODEDIR/include/node"; exit 1; }
  # REHEARSE_KEEP=dir keeps (and on the next run reuses) the rehearsed build: npm ci + compiling SQLite takes minutes.
  BUILD="${REHEARSE_KEEP:-$WORK}/build"
  if [[ -f "$BUILD/.done" ]]; then
    say "reusing the rehearsed build in $BUILD"
  else
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    cp package.json package-lock.json tsconfig.json tsconfig.build.json "$BUILD/"
    cp -r src scripts "$BUILD/"
    (
      cd "$BUILD"
      export npm_config_nodedir="$NODEDIR" npm_config_build_from_source=true
      npm ci --no-audit --no-fund
      npm run build
      npm prune --omit=dev --omit=optional --no-audit --no-fund
      find node_modules -type d -empty -delete
      cd node_modules/better-sqlite3
      mv build/Release/better_sqlite3.node "$WORK/"
      rm -rf build deps src
      mkdir -p build/Release
      mv "$WORK/better_sqlite3.node" build/Release/
    ) >&2
    touch "$BUILD/.done"
  fi
  APP="$WORK/app"
  mkdir -p "$APP"
  cp -r "$BUILD/node_modules" "$BUILD/dist" "$APP/"
  cp package.json "$APP/"
  cp -r data "$APP/"
  say "rehearsed the build in $APP"
fi

# --- a devnet on the host ---------------------------------------------------------------------------------------
npx tsx scripts/devnet.ts >"$WORK/devnet.log" 2>&1 &
DEVNET_PID=$!
for _ in $(seq 1 240); do
  grep -q '^DEVNET ' "$WORK/devnet.log" && break
  kill -0 "$DEVNET_PID" 2>/dev/null || { cat "$WORK/devnet.log" >&2; say "the devnet did not start"; exit 1; }
  sleep 0.5
done
DEVNET_JSON=$(grep -m1 '^DEVNET ' "$WORK/devnet.log" | cut -d' ' -f2-)
field() { node -e "process.stdout.write(JSON.parse(process.argv[1])[process.argv[2]])" "$DEVNET_JSON" "$1"; }
FACILITATOR_URL=$(field facilitatorUrl)
PAY_TO=$(field payTo)
CHAIN_RPC_URL=$(field rpcUrl)
say "devnet: facilitator $FACILITATOR_URL, payTo $PAY_TO"

# --- run the image (or the rehearsed runtime tree) in production mode ---------------------------------------------
if [[ $MODE == container ]]; then
  CONTAINER=pressure402-image-check
  $RUNNER rm -f "$CONTAINER" >/dev/null 2>&1 || true
  $RUNNER run -d --name "$CONTAINER" --network host \
    -e HOST=127.0.0.1 -e PORT="$APP_PORT" -e FACILITATOR_URL="$FACILITATOR_URL" -e PAY_TO="$PAY_TO" \
    -e CHAIN_RPC_URL="$CHAIN_RPC_URL" "$IMAGE" >/dev/null
else
  (
    cd "$APP"
    NODE_ENV=production HOST=127.0.0.1 PORT="$APP_PORT" LEDGER_PATH="$WORK/ledger.sqlite" \
      FACILITATOR_URL="$FACILITATOR_URL" PAY_TO="$PAY_TO" CHAIN_RPC_URL="$CHAIN_RPC_URL" \
      exec node dist/src/server.js
  ) >"$WORK/app.log" 2>&1 &
  APP_PID=$!
fi

BASE_URL="http://127.0.0.1:$APP_PORT"
ready=""
for _ in $(seq 1 120); do
  if node -e "fetch('$BASE_URL/ready').then(r=>process.exit(r.status===200?0:1),()=>process.exit(1))"; then
    ready=yes
    break
  fi
  sleep 0.5
done
if [[ -z "$ready" ]]; then
  [[ $MODE == container ]] && $RUNNER logs "$CONTAINER" >&2 || cat "$WORK/app.log" >&2
  say "the server never became ready at $BASE_URL/ready"
  exit 1
fi
say "ready: $(node -e "fetch('$BASE_URL/ready').then(r=>r.text()).then(t=>process.stdout.write(t))")"

# --- one paid call, settled on the devnet -------------------------------------------------------------------------
BASE_URL="$BASE_URL" npm run --silent pay -- GET '/v1/unlocks/upcoming?days=30' >"$WORK/pay.out"
head -n 1 "$WORK/pay.out"                      # status: 200
sed -n '/^settlement:/,$p' "$WORK/pay.out"     # the decoded PAYMENT-RESPONSE, with the devnet transaction

# --- what was built -----------------------------------------------------------------------------------------------
if [[ $MODE == container ]]; then
  [[ $RUNNER == docker ]] && say "health: $(docker inspect --format '{{.State.Health.Status}}' "$CONTAINER" 2>/dev/null || echo unknown)"
  SIZE=$($RUNNER image inspect --format '{{.Size}}' "$IMAGE")
  echo "image $IMAGE size: $SIZE bytes ($((SIZE / 1000000)) MB)"
else
  SIZE=$(du -sb "$APP" | cut -f1)
  echo "runtime tree (what the image adds on top of node:22-bookworm-slim) size: $SIZE bytes ($((SIZE / 1000000)) MB)"
  for p in typescript solc @foundry-rs tsx vitest; do
    [[ -e "$APP/node_modules/$p" ]] && echo "UNEXPECTED in runtime: node_modules/$p" || true
  done
  echo "better-sqlite3 in runtime: $(cd "$APP/node_modules/better-sqlite3" && find . -type f | sort | tr '\n' ' ')"
  echo "largest runtime packages:"
  (cd "$APP/node_modules" && du -s -- [!@]* @*/* 2>/dev/null | sort -rn | head -8 | awk '{printf "  %6.1f MB  %s\n", $1/1024, $2}')
fi
