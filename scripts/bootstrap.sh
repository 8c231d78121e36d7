#!/usr/bin/env bash
# First step of `npm test` and `npm run demo`: installs the npm dependencies — and with them Node 24,
# which every later npm script then runs on — when they are missing or were installed from another
# package-lock.json, so each quick-start command works on a fresh clone. A no-op when node_modules
# is current. "Current" is decided by the lockfile's content, not its mtime: a fresh checkout or a
# second git worktree has a newer lockfile than node_modules without needing a reinstall.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stamp=node_modules/.chartpilot-lock-sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -x node_modules/.bin/node || ! -f node_modules/.package-lock.json || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  echo "bootstrap: installing npm dependencies (npm ci)" >&2
  # prepare (the build, for a git or npm pack install) is skipped: every command that bootstraps
  # builds right after, so a fresh clone compiles once, not twice.
  CHARTPILOT_BOOTSTRAP=1 npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
