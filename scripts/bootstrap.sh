#!/usr/bin/env bash
# First step of `npm test` and `npm run demo`: installs the npm dependencies — and with them Node 24,
# which every later npm script then runs on — when they are missing or older than the lockfile, so
# each quick-start command works on a fresh clone. A no-op when node_modules is current.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ ! -x node_modules/.bin/node || ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "bootstrap: installing npm dependencies (npm ci)" >&2
  npm ci --no-audit --no-fund
fi
