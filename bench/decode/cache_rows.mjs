#!/usr/bin/env node
// A batched cache's rows of different lengths on WASM (issue 38: "a batched step of 4 rows of
// lengths 128, 512, 2048 and 8192 against the sum of the 4 rows' single steps, target <= 1.2x"):
// the median time of one decode step (L = 1) on a cache of 4 rows at those lengths, against the
// sum of the medians of one step on each of 4 batch-1 caches at the same lengths. Attention alone
// is estimated by taking off the same calls at length 1 (projections and the call's own cost).
// Each timed step is taken back with truncate() (untimed), so every step sees the same lengths;
// the batched and single steps alternate round by round.
//
//   bash scripts/build.sh                        (once: web/dist)
//   node bench/decode/cache_rows.mjs [--config E,h,hkv] [--lengths 128,512,2048,8192] [--dtype float32] [--reps 30]
import { importBuiltPackage, parseFlags } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

const DEFAULTS = { config: '1024,8,8', lengths: '128,512,2048,8192', dtype: 'float32', reps: '30' };
const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), DEFAULTS);
const numbers = (list) => list.split(',').map(Number);
const [[E, h, hkv], lengths, reps] = [numbers(v.config), numbers(v.lengths), Number(v.reps)];
const B = lengths.length;
const { MultiHeadAttention } = await importBuiltPackage();

const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, threads: 1, backend: 'wasm' });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) =>
  [name, { data: filled(shape.reduce((a, b) => a * b, 1), 11 + i, 0.05), shape }])));
const maxLength = Math.max(...lengths) + 1;
const tokens = (n, seed) => filled(n * E, seed, 1);

// Fills row `row` of `cache` (rows: whether to name it: a batched cache) with n positions.
async function fill(cache, n, row, rows) {
  const x = tokens(n, 5 + row);
  for (let at = 0; at < n; at += 512) {
    const m = Math.min(512, n - at);
    const t = { data: x.subarray(at * E, (at + m) * E), shape: [1, m, E] };
    await mha.forward(t, t, t, rows ? { cache, rows: [row] } : { cache });
  }
}

// One step on `cache` (x: its input) in ms, taken back after it (untimed).
async function step(cache, x) {
  const back = cache.lengths;
  const t0 = performance.now();
  await mha.forward(x, x, x, { cache });
  const ms = performance.now() - t0;
  cache.truncate(back);
  return ms;
}

// The batched step and the rows' single steps, interleaved round by round (the machine's load
// drifts): their medians, the singles' summed.
async function measure(rowLengths) {
  const batched = mha.createCache({ batchSize: B, maxLength, dtype: v.dtype });
  const alone = rowLengths.map(() => mha.createCache({ maxLength, dtype: v.dtype }));
  for (const [b, n] of rowLengths.entries()) {
    if (n === 0) continue;
    await fill(batched, n, b, true);
    await fill(alone[b], n, b, false);
  }
  const x = { data: tokens(B, 9), shape: [B, 1, E] };
  const one = (b) => ({ data: x.data.subarray(b * E, (b + 1) * E), shape: [1, 1, E] });
  const together = [];
  const single = alone.map(() => []);
  for (let i = 0; i <= reps; i++) {
    const t = await step(batched, x);
    const s = [];
    for (const [b, cache] of alone.entries()) s.push(await step(cache, one(b)));
    if (i === 0) continue;  // untimed first round
    together.push(t);
    s.forEach((ms, b) => single[b].push(ms));
  }
  for (const c of [batched, ...alone]) c.dispose();
  return { together: median(together), sum: single.reduce((a, ms) => a + median(ms), 0) };
}

console.log(`(${E}, ${h}, ${hkv}) ${v.dtype} cache, one step (L = 1), median of ${reps}, threads 1, Node ${process.version}`);
const full = await measure(lengths);
const empty = await measure(lengths.map(() => 0));
const ms = (t) => `${t.toFixed(3)} ms`;
console.log(`rows at ${lengths.join(', ')}: batched step ${ms(full.together)}, sum of ${B} single steps ${ms(full.sum)} `
  + `(${(full.together / full.sum).toFixed(2)}x)`);
const attention = { together: full.together - empty.together, sum: full.sum - empty.sum };
console.log(`attention (less the same steps at length 0): batched ${ms(attention.together)}, sum ${ms(attention.sum)} `
  + `(${(attention.together / attention.sum).toFixed(2)}x)`);
mha.dispose();
