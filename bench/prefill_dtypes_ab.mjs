#!/usr/bin/env node
// Prefill time of each weights dtype against float32's, for two builds of the package (a change's
// before and after) in ONE Node process: each package root is its own ES module graph with its
// own WASM instance. Each round times every (build, dtype) once, in an order that rotates from
// round to round, so a slow spell of the machine hits them alike; the table gives, per build, the
// median over rounds of (dtype ms / float32 ms of the same round): the "within 1.1× of f32".
//
//   node bench/prefill_dtypes_ab.mjs <package root A> <package root B> [--rounds N]
//   e.g. a copy of web/ and package.json taken before rebuilding as A, the repository as B.
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { filled } from '../tests/contract/random.mjs';

const SHAPES = [[512, 512, 8], [1024, 768, 12]];  // (L, E, h): a self-attention forward [1, L, E]
const WEIGHTS = ['float32', 'float16', 'bfloat16', 'int8'];

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

async function prefill(api, [L, E, h], weightsDtype) {
  const mha = await api.MultiHeadAttention.create({ embedDim: E, numHeads: h, weightsDtype, threads: 1, backend: 'wasm' });
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [name, { data: filled(n, 11 + i, 1 / Math.sqrt(shape.at(-1))), shape }];
  })));
  const x = { data: filled(L * E, 2, 1), shape: [1, L, E] };
  return {
    async run() {
      const t0 = performance.now();
      await mha.forward(x, x, x);
      return performance.now() - t0;
    },
    dispose: () => mha.dispose(),
  };
}

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '11' } } });
if (positionals.length !== 2) {
  console.error('usage: node bench/prefill_dtypes_ab.mjs <package root A> <package root B> [--rounds N]');
  process.exit(2);
}
const apis = await Promise.all(positionals.map((root) => import(pathToFileURL(resolve(root, 'web/src/node.js')).href)));
const rounds = Number(values.rounds);
console.log(`A = ${positionals[0]}, B = ${positionals[1]}; module ${(await apis[0].capabilities()).wasmModule}, ` +
  `1 thread, ${rounds} rounds; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
console.log('| (L, E, h) | weights | A ms | B ms | A: ÷ f32 | B: ÷ f32 |\n|---|---|---:|---:|---:|---:|');
for (const shape of SHAPES) {
  const runs = [];  // [build][dtype]
  for (const api of apis) runs.push(await Promise.all(WEIGHTS.map((d) => prefill(api, shape, d))));
  const contenders = runs.flatMap((row, b) => row.map((c, d) => ({ c, b, d })));
  for (const { c } of contenders) await c.run();  // warm-up
  const ms = runs.map((row) => row.map(() => []));
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < contenders.length; i++) {
      const { c, b, d } = contenders[(i + r) % contenders.length];
      ms[b][d].push(await c.run());
    }
  }
  WEIGHTS.forEach((dtype, d) => {
    const ratio = (b) => median(ms[b][d].map((t, r) => t / ms[b][0][r])).toFixed(3);
    console.log(`| (${shape}) | ${dtype} | ${median(ms[0][d]).toFixed(1)} | ${median(ms[1][d]).toFixed(1)} | ${ratio(0)} | ${ratio(1)} |`);
  });
  runs.flat().forEach((c) => c.dispose());
}
console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
