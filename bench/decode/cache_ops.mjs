#!/usr/bin/env node
// cache.fork() and cache.truncate() on WASM (issue 38: "truncate and fork must cost about one copy
// of the kept bytes, measured"): a cache of maxLength n filled with n positions, then the median
// time of fork() (a new cache and a copy of its storage in the core) against a plain typed-array
// copy of the same bytes in JS (slice(): allocation and copy, as a fork is; set(): the copy into
// an existing array alone), and of truncate(n/2) on a fork (the core zeroes the dropped half)
// against a set() of that half.
//
//   bash scripts/build.sh                        (once: web/dist)
//   node bench/decode/cache_ops.mjs [--config E,h,hkv] [--positions 512,2048] [--dtype float32] [--reps 30]
import { importBuiltPackage, parseFlags } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  config: '1024,8,8',
  positions: '512,2048',
  dtype: 'float32',
  reps: '30',
});
const [E, h, hkv] = v.config.split(',').map(Number);
const reps = Number(v.reps);
const { MultiHeadAttention } = await importBuiltPackage();

const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
/**
 * Median ms of body(state) over reps runs (after one untimed run); state = prepare() before each
 * and done(what body returned) after it, both untimed.
 */
function time(body, prepare = () => null, done = () => {}) {
  const ms = [];
  for (let i = 0; i <= reps; i++) {
    const state = prepare();
    const t0 = performance.now();
    const result = body(state);
    if (i > 0) ms.push(performance.now() - t0);
    done(result);
  }
  return median(ms);
}

const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, threads: 1, backend: 'wasm' });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) =>
  [name, { data: filled(shape.reduce((a, b) => a * b, 1), 11 + i, 0.05), shape }])));
const d = E / h;
// Bytes a position takes in the cache: K and V of every K/V head, int8 with its two scales.
const perPosition = hkv * (v.dtype === 'int8' ? 2 * d + 8 : 2 * d * (v.dtype === 'float16' ? 2 : 4));
console.log(`(${E}, ${h}, ${hkv}) ${v.dtype} cache, median of ${reps}, Node ${process.version}`);
for (const n of v.positions.split(',').map(Number)) {
  const cache = mha.createCache({ maxLength: n, dtype: v.dtype });
  const x = filled(n * E, 5, 1);
  for (let at = 0; at < n; at += 512) {
    const t = { data: x.subarray(at * E, Math.min(n, at + 512) * E), shape: [1, Math.min(512, n - at), E] };
    await mha.forward(t, t, t, { cache });
  }
  const bytes = n * perPosition;
  const source = new Uint8Array(bytes).map((_, i) => i);
  const fork = time(() => cache.fork(), () => null, (f) => f.dispose());
  const copy = time(() => source.slice());
  const target = new Uint8Array(bytes);
  const set = time(() => target.set(source));
  const truncate = time((f) => {
    f.truncate(n / 2);
    return f;
  }, () => cache.fork(), (f) => f.dispose());
  const half = time(() => target.set(source.subarray(0, bytes / 2)));
  const mb = (b) => (b / 2 ** 20).toFixed(1);
  const ms = (t) => `${t.toFixed(3)} ms`;
  console.log(`n = ${n} (${mb(bytes)} MiB): fork ${ms(fork)}; copy: slice() ${ms(copy)}, set() ${ms(set)}; `
    + `truncate(${n / 2}) ${ms(truncate)}, set() of the dropped ${mb(bytes / 2)} MiB ${ms(half)}`);
  cache.dispose();
}
mha.dispose();
