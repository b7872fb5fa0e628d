# Sourced by the scripts: settings that Debian's Emscripten 3.1.6 needs.
# NodeSource's node cannot find Debian's acorn for -O2+ links without this.
export NODE_PATH="${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs"
# Two cores here; never more than the machine has.
JOBS="$(nproc)"
# The WASM builds, one per module of web/modules.json and one folder each: scripts/build.sh makes
# them, scripts/test.sh tests them.
WASM_VARIANTS="$(node -p "require(process.argv[1]).modules.map((m) => m.name).join(' ')" \
  "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/web/modules.json")"
# The single-threaded modules (those Node runs: no pthreads in Node), and the node flags one needs
# (Node 20 runs relaxed SIMD only behind a flag).
SINGLE_THREADED_MODULES="$(node -p "require(process.argv[1]).modules.filter((m) => !m.threads).map((m) => m.name).join(' ')" \
  "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/web/modules.json")"
node_flags_for_module() {
  node -p "require(process.argv[1]).modules.find((m) => m.name === process.argv[2]).relaxed ? '--experimental-wasm-relaxed-simd' : ''" \
    "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/web/modules.json" "$1"
}
# The node flag of every `node --test` run (scripts/node_test.mjs passes it to each file's process):
# without it, Node 20 can deadlock at a test file's exit (nodejs/node#54918: the main thread waits
# in DrainTasks for a concurrent TurboFan job that waits for the main thread's GC). Seen here in
# tests/js/cache_read.test.js with WEBATTENTION_THREADS=2: 18 of 30 runs hung, 0 of 30 with it.
# TurboFan then compiles on the main thread; the package itself needs no flag.
NODE_TEST_FLAGS="--no-concurrent-recompilation"
wasm_build_dir() { if [ "$1" = simd ]; then echo build/wasm; else echo "build/wasm-$1"; fi; }
