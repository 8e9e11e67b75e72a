#!/usr/bin/env bash
# Installs Node <major> (default 24, the recommended one) into .node<major>/ from the npm registry's
# node-linux-<arch> package, and prints that folder. Run the project on it with:
#   export PATH="$(scripts/node.sh 24)/bin:$PATH"
# When it cannot, it says why on stderr and exits 1, still printing that (absent) folder: that line
# then puts a folder with no Node first on PATH, where an empty answer would put /bin, and with it
# the system's Node, first.
set -euo pipefail
cd "$(dirname "$0")/.."
major="${1:-24}"
dir="$PWD/.node$major"
fail() {
  printf 'scripts/node.sh: %s\nscripts/node.sh: nothing installed; the Node on PATH stays %s\n' "$1" "$(node --version 2>/dev/null || echo none)" >&2
  echo "$dir"
  exit 1
}
[[ "$major" =~ ^[0-9]+$ ]] || fail "give Node's major version, a number such as 24 or 22 (not \"$major\")"
if [ ! -x "$dir/bin/node" ]; then
  package="node-linux-$(node -p process.arch)@$major"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # npm's own error lines say what went wrong (no such version, no network), less its log's path.
  if ! (cd "$tmp" && npm pack --loglevel=error "$package" >/dev/null 2>npm-error); then
    fail "npm could not fetch $package from the npm registry:
$(grep -v 'complete log' "$tmp/npm-error")"
  fi
  mkdir -p "$dir"
  tar -xzf "$tmp"/node-linux-*.tgz -C "$dir" --strip-components=1
fi
echo "$dir"
