#!/usr/bin/env node
// Two builds' decode steps, each in processes of its own, alternated A B A B …: versions_ab.mjs
// times both builds in one process, where the build imported first ran decode 4–20 % faster
// whichever it was (two WASM instances side by side), so a small difference in decode needs
// separate processes. Each process times `steps` decode steps (L = 1, f32, one thread) at (E, h, h)
// over a cache refilled to n positions every 8 steps (untimed), and prints its median; the pairs'
// ratios (B ms / A ms) and their median come out.
//
//   node bench/ab/process_decode_ab.mjs <package root A> <package root B> [--pairs N] [--steps N]
//        [--shape E/h] [--cache n]        (each root's web/dist/node.js: bash scripts/build.sh there)
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { exitWithUsage, loadAverage, parseFlags, runChild } from '../lib/run_env.mjs';
import { filled, median } from '../lib/suite.mjs';

const { values: v, positionals } = parseFlags(import.meta.url, process.argv.slice(2), {
  pairs: { type: 'string', default: '10' }, steps: { type: 'string', default: '2000' }, shape: { type: 'string', default: '768/12' },
  cache: { type: 'string', default: '128' }, child: { type: 'boolean', default: false },
}, { allowPositionals: true });
const [E, h] = v.shape.split('/').map(Number);
const sizes = { pairs: Number(v.pairs), steps: Number(v.steps), n: Number(v.cache), E, h };
for (const [k, x] of Object.entries(sizes)) if (!(Number.isInteger(x) && x > 0)) exitWithUsage(import.meta.url, `--${k}: expected a positive integer`);

/** This process: the median ms of a decode step of the build at `root`. */
async function childRun(root) {
  const { MultiHeadAttention } = await import(pathToFileURL(join(resolve(root), 'web/dist/node.js')).href);
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, backend: 'wasm', threads: 1 });
  const sd = Object.fromEntries(mha.stateDictShapes.map((s, i) => [s.name, filled(s.shape.reduce((a, b) => a * b, 1), 3 + i, 0.1)]));
  mha.loadStateDict(sd);
  const cache = mha.createCache({ batchSize: 1, maxLength: sizes.n + 8 });
  const prompt = { data: filled(sizes.n * E, 7, 1), shape: [1, sizes.n, E] }, x = { data: filled(E, 11, 1), shape: [1, 1, E] };
  const times = [];
  for (let t = 0; t < sizes.steps; t++) {
    if (t % 8 === 0) {
      cache.reset();
      await mha.forward(prompt, prompt, prompt, { cache });
    }
    const t0 = performance.now();
    await mha.forward(x, x, x, { cache });
    times.push(performance.now() - t0);
  }
  return median(times.sort((a, b) => a - b));
}

if (v.child) {
  console.log(await childRun(positionals[0]));
} else {
  if (positionals.length !== 2) exitWithUsage(import.meta.url, 'expected two package roots');
  const run = (root) => runChild(import.meta.url, [root, '--steps', String(sizes.steps), '--shape', v.shape, '--cache', String(sizes.n)]);
  const ratios = [];
  console.log(`decode step (E, h) = (${E}, ${h}), n = ${sizes.n}, ${sizes.steps} steps a process; A = ${positionals[0]}, B = ${positionals[1]}`);
  for (let p = 0; p < sizes.pairs; p++) {
    const a = run(positionals[0]), b = run(positionals[1]);
    ratios.push(b / a);
    console.log(`  pair ${p + 1}: A ${a.toFixed(4)} ms, B ${b.toFixed(4)} ms, B / A ${(b / a).toFixed(3)}`);
  }
  console.log(`B / A: median ${median([...ratios].sort((x, y) => x - y)).toFixed(3)} over ${sizes.pairs} pairs; load average ${loadAverage()}`);
}
