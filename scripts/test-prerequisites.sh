#!/usr/bin/env bash
# Runs before `npm test`: the suite needs Debian's chromium (the /docs browser test, via playwright-core), nginx (the
# 402 behind a stock reverse proxy, test/e2e/nginx.test.ts), curl and jq (the README's curl walk-through), promtool (the shipped alert rules). A fresh
# machine gets them from Debian's packages when we may install (root with apt-get); otherwise this says what is missing
# and the browser/nginx/curl tests fail with the same message.
set -euo pipefail
# The agentcash CLI (driven by test/e2e/lost-answers.test.ts) is its own npm project under test/clients/agentcash: its
# mppx 0.5 cannot be installed beside this project's viem. Installed from its lock file when absent or when the lock
# file is newer than the install.
agentcash="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/clients/agentcash"
if [ ! -f "$agentcash/node_modules/.package-lock.json" ] ||
  [ "$agentcash/package-lock.json" -nt "$agentcash/node_modules/.package-lock.json" ]; then
  echo "test prerequisites: installing the agentcash CLI into test/clients/agentcash" >&2
  npm ci --prefix "$agentcash" --ignore-scripts --no-audit --no-fund >&2
fi
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v curl >/dev/null 2>&1 || missing+=(curl)
command -v jq >/dev/null 2>&1 || missing+=(jq)
# promtool checks the shipped alert rules (test/deploy/monitoring.test.ts); Debian ships it in the prometheus package.
command -v promtool >/dev/null 2>&1 || [ -x /usr/bin/promtool ] || missing+=(prometheus)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test prerequisites: installing ${missing[*]} from Debian's packages" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
else
  echo "test prerequisites missing: ${missing[*]} (Debian: sudo apt-get install -y ${missing[*]})" >&2
fi
