// Runs membw.wasm (bench/limits/membw/membw.c, built by build.sh) in this engine, Node or a page: the
// memory-read bandwidth of one thread summing a Float32Array far larger than the caches.
// The buffer is filled (every page touched) before timing; the first passes run on V8's baseline
// compiler, so the best of several passes is what optimized WASM code reaches: the bandwidth the
// decode benchmark's memory bound divides by (higher bandwidth = lower bound: the strict side).

/** wasmBytes: membw.wasm's bytes. Resolves to { gbps (best pass), medianGbps, megabytes, passes }. */
export async function measureReadBandwidth(wasmBytes, { megabytes = 256, passes = 40 } = {}) {
  const { instance } = await WebAssembly.instantiate(wasmBytes, {});
  const { grow, sum, memory } = instance.exports;
  const bytes = megabytes * 2 ** 20;
  const start = grow(bytes / 65536 + 1);
  if (!start) throw new Error(`membw: could not grow WASM memory by ${megabytes} MiB`);
  const n = bytes / 4;
  new Float32Array(memory.buffer, start, n).fill(1);
  const rates = [];
  for (let i = 0; i < passes; i++) {
    const t0 = performance.now();
    const s = sum(start, n);
    const ms = performance.now() - t0;
    if (s !== n) throw new Error(`membw: sum ${s}, expected ${n}`);  // every float read once
    rates.push(bytes / (ms * 1e6));
  }
  rates.sort((a, b) => a - b);
  return { gbps: rates[rates.length - 1], medianGbps: rates[rates.length >> 1], megabytes, passes };
}
