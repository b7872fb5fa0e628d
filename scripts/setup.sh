#!/usr/bin/env bash
# Installs everything the build, the demo and the tests need on a fresh Debian 12 machine (root),
# then the npm dev dependencies. Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(emscripten cmake make g++ clang libclang-rt-14-dev googletest libgtest-dev libeigen3-dev chromium libvulkan1)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# `npm install` (which keeps to package-lock.json), not `npm ci`: the registry reachable here
# lacks some of rollup's optional per-platform packages, and `npm ci` refuses a lock without them.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund
fi
