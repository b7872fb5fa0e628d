# Sourced by the scripts: settings that Debian's Emscripten 3.1.6 needs.
# NodeSource's node cannot find Debian's acorn for -O2+ links without this.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
# Two cores here; never more than the machine has.
JOBS="$(nproc)"
# The WASM builds, one folder each: scripts/build.sh makes them, scripts/test.sh tests them.
WASM_VARIANTS="simd relaxed scalar mt mt-relaxed"
wasm_build_dir() { if [ "$1" = simd ]; then echo build/wasm; else echo "build/wasm-$1"; fi; }
