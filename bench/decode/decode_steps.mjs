#!/usr/bin/env node
// Whole decode steps over a long cache, for profiling and A/B runs: a module of (E, h, hkv) with
// random weights, its cache filled to n positions (prefill in chunks of 512), then `steps` decode
// steps (each appends a position, so the cache ends at n + steps); prints their mean ms per step.
// Unlike bench/decode/decode.mjs (medians per cell, cells interleaved, peers), one configuration in one
// process, long enough to attach a profiler:
//
//   node bench/decode/decode_steps.mjs [--config 2048,32,8] [--positions 8192] [--steps 1500]
//                               [--weights float32|float16|bfloat16|int8|int4] [--cache float32|float16|int8]
//                               [--window W] [--ready FILE]
//
//   --window W     a sliding-window cache of W positions instead (filled to W; every step then
//                  attends W keys): a step's fixed part, with the weights hot in the CPU's caches
//                  (bench/decode/decode.mjs interleaves its cells, so its weights come from memory)
//   --ready FILE   write FILE when the timed steps start (a script then attaches `perf record -p`)
//
// Which WASM module runs: the package's choice, or WEBATTENTION_WASM=simd|relaxed|scalar. For an
// A/B of two builds, run it alternately with each build's web/dist/*.wasm in place. Weights and
// inputs are bench/decode/decode.mjs's (decode_suite.mjs), so E / h must be its head width.
import { writeFileSync } from 'node:fs';
import { HEAD_DIM, makeDecodeWeights, stateDict } from './decode_suite.mjs';
import { exitWithUsage, importBuiltPackage, parseFlags } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  config: '2048,32,8',
  positions: '8192',
  steps: '1500',
  weights: 'float32',
  cache: 'float32',
  window: { type: 'string' },
  ready: { type: 'string' },
});
const [E, h, hkv] = v.config.split(',').map(Number);
if (E !== h * HEAD_DIM) exitWithUsage(import.meta.url, `--config: E must be h · ${HEAD_DIM}, got ${v.config}`);
const window = v.window === undefined ? 0 : Number(v.window);
const n = window || Number(v.positions), steps = Number(v.steps);
const { MultiHeadAttention } = await importBuiltPackage();

const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, threads: 1, backend: 'wasm',
  weightsDtype: v.weights });
mha.loadStateDict(stateDict(mha.stateDictShapes, makeDecodeWeights({ E, h, hkv })));
const cache = mha.createCache(window ? { batchSize: 1, window, dtype: v.cache }
  : { batchSize: 1, maxLength: n + steps, dtype: v.cache });
// A window's cache keeps its length: its first steps, untimed, let V8 optimise the decode kernels.
const warm = window ? Math.min(steps, 500) : 0;
const x = filled((n + warm + steps) * E, 7 + E, 1);
const rows = (from, to) => ({ data: x.subarray(from * E, to * E), shape: [1, to - from, E] });
for (let at = 0; at < n; at += 512) {
  const t = rows(at, Math.min(n, at + 512));
  await mha.forward(t, t, t, { cache });
}
const step = (p) => {
  const t = rows(p, p + 1);
  return mha.forward(t, t, t, { cache });
};
for (let p = n; p < n + warm; p++) await step(p);

if (v.ready) writeFileSync(v.ready, 'timing\n');
const start = performance.now();
for (let p = n + warm; p < n + warm + steps; p++) await step(p);
const ms = (performance.now() - start) / steps;
const span = window ? `window ${window}` : `n = ${n} → ${n + steps}`;
console.log(`(${E}, ${h}, ${hkv}) ${v.weights} weights, ${v.cache} cache, ${span}: ${ms.toFixed(3)} ms per step`);
mha.dispose();
