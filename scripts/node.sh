#!/usr/bin/env bash
# Installs Node <major> (default 24, the recommended one) into .node<major>/ from the npm registry's
# node-linux-<arch> package, and prints that folder. Run the project on it with:
#   export PATH="$(scripts/node.sh 24)/bin:$PATH"
set -euo pipefail
cd "$(dirname "$0")/.."
major="${1:-24}"
dir="$PWD/.node$major"
if [ ! -x "$dir/bin/node" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$(node -p process.arch)@$major" >/dev/null 2>&1)
  mkdir -p "$dir"
  tar -xzf "$tmp"/node-linux-*.tgz -C "$dir" --strip-components=1
fi
echo "$dir"
