#!/usr/bin/env bash
# Installs everything the build, the demo and the tests need on a fresh Debian 12 machine (root),
# then the npm dev dependencies. Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(emscripten cmake make g++ clang libclang-rt-14-dev googletest libgtest-dev libeigen3-dev chromium firefox-esr libvulkan1 ccache)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)
source scripts/apt_install_missing.sh
apt_install_missing setup "${packages[@]}"

# `npm install` (which keeps to package-lock.json), not `npm ci`: the registry reachable here
# lacks some of rollup's optional per-platform packages, and `npm ci` refuses a lock without them.
# --no-save: without it npm writes those packages' entries into package-lock.json, so every
# `npm start` or `npm test` left the checkout with a modified lock file.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund --no-save
fi
