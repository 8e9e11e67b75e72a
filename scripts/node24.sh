#!/usr/bin/env bash
# Installs Node 24, the recommended runtime, into .node24/ from the npm registry's node-linux-<arch>
# package (it carries the headers node-gyp needs to build better-sqlite3), and prints that folder.
# Run the project on it with:
#   n24=$(scripts/node24.sh); export PATH="$n24/bin:$PATH" npm_config_nodedir="$n24"
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$PWD/.node24"
if [ ! -x "$dir/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$(node -p process.arch)@24" >/dev/null 2>&1)
  mkdir -p "$dir"
  tar -xzf "$tmp"/node-linux-*.tgz -C "$dir" --strip-components=1
fi
echo "$dir"
