#!/usr/bin/env bash
# Builds the production image and exercises it on a devnet running on this host: waits for the HEALTHCHECK to say
# `healthy`, pays all five routes (each must move exactly its price on chain), runs the receipts export inside the
# container and checks it against the chain (scripts/image-check.ts), stops the container (it must exit 0), and
# prints what the image adds to its base. Everything it started (devnet, container, volume) is removed on any exit.
#
#   scripts/image.sh              build and run with Docker (its daemon must answer `docker info`)
#   scripts/image.sh --rehearse   no Docker: replay the Dockerfile's build stage in a temporary directory (npm ci,
#                                 scripts/image-runtime.mjs) and run the runtime tree as the image's CMD does, with the
#                                 same checks; prints the runtime tree's size instead of the image's
#
# Env: IMAGE (default pressure402:local), NODE_IMAGE (the base, default node:24-bookworm-slim; without a container
# registry build it with scripts/standin-node-base/build.sh), APP_PORT and METRICS_PORT (default: free ports), MAX_ADDED_MB (default
# 40: fail when the image adds more to its base), HEALTH_TIMEOUT_S (default 180), REHEARSE_KEEP (--rehearse: keep
# and reuse the rehearsed build in this directory). The container uses the host network so that it reaches the
# devnet's 127.0.0.1 addresses (Linux).
set -euo pipefail
cd "$(dirname "$0")/.."
IMAGE=${IMAGE:-pressure402:local}
NODE_IMAGE=${NODE_IMAGE:-node:24-bookworm-slim}
MAX_ADDED_MB=${MAX_ADDED_MB:-40}
HEALTH_TIMEOUT_S=${HEALTH_TIMEOUT_S:-180}
MODE=container
case "${1:-}" in
  "") ;;
  --rehearse) MODE=rehearse ;;
  *) echo "usage: scripts/image.sh [--rehearse]" >&2; exit 2 ;;
esac

say() { printf 'image.sh: %s\n' "$*" >&2; }
WORK=$(mktemp -d)
RUN_ID=pressure402-image-check-$$
DEVNET_PID="" STANDIN_PID="" APP_PID="" CONTAINER="" VOLUME=""
stop_pid() { # SIGTERM, then wait: the devnet stops anvil and the server settles what is in flight before exiting
  kill "$1" 2>/dev/null || return 0
  wait "$1" 2>/dev/null || true
}
cleanup() {
  [[ -n "$CONTAINER" ]] && docker rm -f -v "$CONTAINER" >/dev/null 2>&1 || true
  [[ -n "$VOLUME" ]] && docker volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  [[ -n "$APP_PID" ]] && stop_pid "$APP_PID"
  [[ -n "$DEVNET_PID" ]] && stop_pid "$DEVNET_PID"
  [[ -n "$STANDIN_PID" ]] && stop_pid "$STANDIN_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT
# A signal ends the script through `exit`, so that the EXIT trap cleans up (bash skips it on an untrapped signal).
trap 'exit 130' INT
trap 'exit 143' TERM HUP

free_port() {
  node -e "const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>{process.stdout.write(String(s.address().port));s.close()})"
}
[[ -n "${APP_PORT:-}" ]] || APP_PORT=$(free_port)
# /metrics has its own loopback listener (never the public port); the container shares the host's network.
[[ -n "${METRICS_PORT:-}" ]] || METRICS_PORT=$(free_port)

# --- build ------------------------------------------------------------------------------------------------------
if [[ $MODE == container ]]; then
  if ! command -v docker >/dev/null || ! docker info >/dev/null 2>&1; then
    say "no Docker daemon answers 'docker info'. Debian: apt-get install -y docker.io, then"
    say "  setsid dockerd > dockerd.log 2>&1 < /dev/null &   (as root). Or run 'scripts/image.sh --rehearse'."
    exit 1
  fi
  if ! docker image inspect "$NODE_IMAGE" >/dev/null 2>&1; then
    say "the base image $NODE_IMAGE is not here: docker will pull it. Without a container registry, build it"
    say "  first: NODE_VERSION=24.21.0 NPM_VERSION=11.21.2 scripts/standin-node-base/build.sh"
  fi
  BUILD_START=$(date +%s)
  previous=$(docker image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)
  docker build --build-arg NODE_IMAGE="$NODE_IMAGE" -t "$IMAGE" . >&2
  # The build stage's image (the toolchain and every dev dependency) is not kept.
  docker image prune -f --filter label=pressure402.stage=build >&2 || true
  say "built $IMAGE on $NODE_IMAGE in $(($(date +%s) - BUILD_START)) s"
  # The image this build replaced under the tag, unless something still uses or names it.
  if [[ -n $previous && $previous != "$(docker image inspect --format '{{.Id}}' "$IMAGE")" ]]; then
    docker rmi "$previous" >/dev/null 2>&1 || true
  fi
else
  NODEDIR=$(dirname "$(dirname "$(command -v node)")")
  [[ -f "$NODEDIR/include/node/node_api.h" ]] || { say "no Node headers under $NODEDIR/include/node"; exit 1; }
  # The Dockerfile's build stage, step by step, on this machine's Node ($(node -v); the image has $NODE_IMAGE).
  BUILD="${REHEARSE_KEEP:-$WORK}/build"
  if cmp -s package-lock.json "$BUILD/package-lock.json" && [[ -f "$BUILD/.installed" ]]; then
    say "reusing the rehearsed npm ci in $BUILD"
  else
    rm -rf "$BUILD"
    mkdir -p "$BUILD"
    cp package.json package-lock.json "$BUILD/"
    (cd "$BUILD" && npm ci --no-audit --no-fund --ignore-scripts && cd node_modules/better-sqlite3 \
      && node "$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js" rebuild --release --nodedir="$NODEDIR") >&2
    touch "$BUILD/.installed"
  fi
  rm -rf "$BUILD/src" "$BUILD/scripts" "$BUILD/data"
  mkdir -p "$BUILD/scripts" "$BUILD/data"
  cp -r tsconfig.json src "$BUILD/"
  cp scripts/start.mjs scripts/image-runtime.mjs scripts/receipts.ts scripts/ledger.ts "$BUILD/scripts/"
  cp data/unlocks.snapshot.json data/catalog.snapshot.json "$BUILD/data/"
  mkdir -p "$BUILD/data/circulating-reported"
  cp data/circulating-reported/coinmarketcap-monthly.csv "$BUILD/data/circulating-reported/"
  cp data/coingecko-ids.json "$BUILD/data/"
  mkdir -p "$BUILD/data/x402-catalog"
  cp data/x402-catalog/catalog.json "$BUILD/data/x402-catalog/"
  cp -r data/bazaar "$BUILD/data/"
  APP="$WORK/app"
  node "$BUILD/scripts/image-runtime.mjs" "$APP" >&2
fi

# --- a devnet on the host (node itself, not npx: its process is the one to stop) ----------------------------------
# The JSON a helper process prints after TAG once it is up (LOG its output, PID the process, WHAT its name).
announced() { # LOG PID TAG WHAT
  for _ in $(seq 1 240); do
    grep -q "^$3 " "$1" && break
    kill -0 "$2" 2>/dev/null || { cat "$1" >&2; say "the $4 did not start"; exit 1; }
    sleep 0.5
  done
  grep -m1 "^$3 " "$1" | cut -d' ' -f2- || { say "the $4 did not start in 120 s"; exit 1; }
}
json_field() { node -e "process.stdout.write(JSON.parse(process.argv[1])[process.argv[2]])" "$1" "$2"; }
node --import tsx scripts/devnet.ts >"$WORK/devnet.log" 2>&1 &
DEVNET_PID=$!
DEVNET_JSON=$(announced "$WORK/devnet.log" "$DEVNET_PID" DEVNET devnet) || exit 1
field() { json_field "$DEVNET_JSON" "$1"; }
FACILITATOR_URL=$(field facilitatorUrl)
PAY_TO=$(field payTo)
CHAIN_RPC_URL=$(field rpcUrl)
BASE_URL="http://127.0.0.1:$APP_PORT"
say "devnet: facilitator $FACILITATOR_URL, chain $CHAIN_RPC_URL, payTo $PAY_TO"

# --- a market-data source on the host: the shipped real candles, and the snapshot as if built 21 days earlier ------
# The server starts on the earlier snapshot; its refresh must bring the later closes in, with no restart.
STANDIN_DIR="$WORK/standin"
mkdir -p "$STANDIN_DIR"
chmod 755 "$STANDIN_DIR"
node --import tsx scripts/image-refresh-standin.ts "$STANDIN_DIR" >"$WORK/standin.log" 2>&1 &
STANDIN_PID=$!
STANDIN_JSON=$(announced "$WORK/standin.log" "$STANDIN_PID" STANDIN "market stand-in") || exit 1
standin() { json_field "$STANDIN_JSON" "$1"; }
EARLIER_LAST=$(standin earlierLast)
SHIPPED_LAST=$(standin shippedLast)
chmod 644 "$STANDIN_DIR/earlier.snapshot.json"
# Every other source is a closed loopback port: the refresh must keep their data and still take the candles.
DOWN=http://127.0.0.1:9
SNAPSHOT_IN_APP="$STANDIN_DIR/earlier.snapshot.json"
[[ $MODE == container ]] && SNAPSHOT_IN_APP=/standin/earlier.snapshot.json

# --- run the image (or the rehearsed runtime tree) in production mode ---------------------------------------------
APP_ENV=(HOST=127.0.0.1 PORT="$APP_PORT" METRICS_PORT="$METRICS_PORT" PUBLIC_BASE_URL="$BASE_URL"
  FACILITATOR_URL="$FACILITATOR_URL" PAY_TO="$PAY_TO" CHAIN_RPC_URL="$CHAIN_RPC_URL"
  UNLOCKS_SNAPSHOT="$SNAPSHOT_IN_APP" REFRESH_INTERVAL_SECONDS=3600 BINANCE_FUTURES_BASE_URL="$(standin url)"
  BYBIT_BASE_URL="$DOWN" COINGECKO_BASE_URL="$DOWN/api/v3" DEFILLAMA_BASE_URL="$DOWN"
  BAZAAR_DISCOVERY_URL="https://127.0.0.1:9/platform/v2/x402/discovery/resources")
if [[ $MODE == container ]]; then
  VOLUME=$RUN_ID-ledger
  docker volume create "$VOLUME" >/dev/null
  CONTAINER=$RUN_ID
  RUN_START=$(date +%s%N)
  docker run -d --name "$CONTAINER" --network host --read-only -v "$VOLUME:/var/lib/pressure402" \
    -v "$STANDIN_DIR:/standin:ro" "${APP_ENV[@]/#/--env=}" "$IMAGE" >/dev/null
  health=""
  while :; do
    health=$(docker inspect --format '{{.State.Health.Status}} {{.State.Running}}' "$CONTAINER")
    [[ $health == "healthy true" ]] && break
    elapsed=$((($(date +%s%N) - RUN_START) / 1000000000))
    if [[ $health == unhealthy* || $health == *false || $elapsed -ge $HEALTH_TIMEOUT_S ]]; then
      docker logs "$CONTAINER" >&2 || true
      say "the container is not healthy ($health) after $elapsed s"
      exit 1
    fi
    sleep 0.5
  done
  HEALTHY_MS=$((($(date +%s%N) - RUN_START) / 1000000))
  say "healthy $((HEALTHY_MS / 1000)).$(printf %03d $((HEALTHY_MS % 1000))) s after docker run"
  RECEIPTS=(docker exec "$CONTAINER" node dist/receipts.mjs)
else
  (cd "$APP" && exec env NODE_ENV=production LEDGER_PATH="$WORK/ledger.sqlite" "${APP_ENV[@]}" node scripts/start.mjs) \
    >"$WORK/app.log" 2>&1 &
  APP_PID=$!
  RECEIPTS=(env -C "$APP" NODE_ENV=production LEDGER_PATH="$WORK/ledger.sqlite" node dist/receipts.mjs)
fi

# /ready also asks the facilitator: wait for it, then check.
ready=""
for _ in $(seq 1 120); do
  if node -e "fetch('$BASE_URL/ready').then(r=>process.exit(r.status===200?0:1),()=>process.exit(1))"; then
    ready=yes
    break
  fi
  [[ -n "$APP_PID" ]] && ! kill -0 "$APP_PID" 2>/dev/null && break
  sleep 0.5
done
if [[ -z "$ready" ]]; then
  if [[ $MODE == container ]]; then docker logs "$CONTAINER" >&2 || true; else cat "$WORK/app.log" >&2; fi
  say "the server never became ready at $BASE_URL/ready"
  exit 1
fi

# The refresh ran at start: the served candles moved from the earlier snapshot's last day to the source's.
refreshed=""
for _ in $(seq 1 120); do
  as_of=$(node -e "fetch('$BASE_URL/v1/tokens').then(r=>r.json()).then(b=>{const t=b.tokens.find(x=>x.symbol==='ARB');process.stdout.write(t?.market?.price_as_of??'')},()=>{})")
  if [[ "$as_of" == "$SHIPPED_LAST" ]]; then refreshed=$as_of; break; fi
  sleep 0.5
done
[[ -n "$refreshed" ]] || { say "the server did not pick up the refreshed candles (ARB still priced at ${as_of:-?}, earlier snapshot ends $EARLIER_LAST)"; exit 1; }
echo "refresh picked up with no restart: ARB priced at $refreshed (started on $EARLIER_LAST; the source has $SHIPPED_LAST)"

node --import tsx scripts/image-check.ts --base-url "$BASE_URL" --metrics-url "http://127.0.0.1:$METRICS_PORT/metrics" \
  --rpc-url "$CHAIN_RPC_URL" --pay-to "$PAY_TO" \
  -- "${RECEIPTS[@]}"

# --- what was built and how it ran ----------------------------------------------------------------------------------
if [[ $MODE == container ]]; then
  user=$(docker exec "$CONTAINER" id -u)
  [[ $user != 0 ]] || { say "the server runs as root"; exit 1; }
  echo "runs as uid $user ($(docker image inspect --format '{{.Config.User}}' "$IMAGE")), root file system read-only: $(docker inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$CONTAINER"), ledger on volume $VOLUME"
  echo "healthy $((HEALTHY_MS / 1000)).$(printf %03d $((HEALTHY_MS % 1000))) s after docker run"
  docker stop --time 30 "$CONTAINER" >/dev/null
  code=$(docker inspect --format '{{.State.ExitCode}}' "$CONTAINER")
  [[ $code == 0 ]] || { docker logs "$CONTAINER" >&2; say "the container exited with $code on SIGTERM"; exit 1; }
  echo "stopped by SIGTERM: exit code 0"
  # What the image adds to its base: its size minus the base's, and the layers above the base's.
  size=$(docker image inspect --format '{{.Size}}' "$IMAGE")
  base_size=$(docker image inspect --format '{{.Size}}' "$NODE_IMAGE")
  added=$((size - base_size))
  layers=$(($(docker history -q "$IMAGE" | wc -l) - $(docker history -q "$NODE_IMAGE" | wc -l)))
  echo "image $IMAGE: $size bytes; adds $added bytes ($((added / 1000000)) MB) to $NODE_IMAGE ($base_size bytes):"
  docker history --no-trunc --human=false --format '{{.Size}}\t{{.CreatedBy}}' "$IMAGE" | head -n "$layers" |
    awk -F'\t' '$1 > 0 { printf "  %12d  %s\n", $1, substr($2, 1, 100) }'
  ((added <= MAX_ADDED_MB * 1000000)) || { say "the image adds more than $MAX_ADDED_MB MB to its base"; exit 1; }
else
  kill "$APP_PID"
  code=0
  wait "$APP_PID" || code=$?
  APP_PID=""
  [[ $code == 0 ]] || { cat "$WORK/app.log" >&2; say "the server exited with $code on SIGTERM"; exit 1; }
  echo "stopped by SIGTERM: exit code 0"
  SIZE=$(du -sb "$APP" | cut -f1)
  echo "runtime tree (what the image adds to $NODE_IMAGE, less a directory for the ledger): $SIZE bytes ($((SIZE / 1000000)) MB)"
fi
echo "image check passed ($MODE)"
