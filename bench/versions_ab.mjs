#!/usr/bin/env node
// Two builds of the package against each other in ONE Node process (a change's before and after):
// each package root is imported as its own ES module graph with its own WASM instance, and each
// round times both, in an order that alternates from round to round, so a slow spell of the
// machine hits them alike. Prefill: a self-attention forward [1, L, E]; decode: one step (L = 1)
// of a KV cache that holds n positions (after `drift` steps it is reset and refilled, untimed).
// Prints each side's median ms and the median over rounds of (A ms / B ms): above 1, B is faster.
// Outputs are compared (max |A − B|) before timing.
//
//   node bench/versions_ab.mjs <package root A> <package root B> [--rounds N] [--quick]
//                              [--dtype f32|f16|i8] [--decode-only] [--positions N,N,...]
// --positions: the decode cases become (768, 12, 12) and (2048, 32, 8) at each n given, no window.
// --dtype: the weights' and the cache's storage (bench/decode_dtypes.mjs), f32 unless given
// (f32 passes no storage option, so that a build from before them can be A).
//   e.g. git worktree add ../before <commit> (and build it), then
//        node bench/versions_ab.mjs ../before .
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { filled } from '../tests/contract/random.mjs';
import { DTYPES, REFERENCE_DTYPE } from './decode_dtypes.mjs';

const PREFILL = [[128, 512, 8], [512, 512, 8], [1024, 768, 12], [2048, 768, 12]];
// [E, h, hkv, n, window (0: none)]
const DECODE = [[768, 12, 12, 128, 0], [768, 12, 12, 2048, 0], [768, 12, 12, 2048, 256], [2048, 32, 8, 128, 0], [2048, 32, 8, 2048, 0]];
const DECODE_SHAPES = [[768, 12, 12], [2048, 32, 8]];  // with --positions

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

/** A module of `api` with deterministic weights, whatever its state-dict names. */
async function makeModule(api, create) {
  const mha = await api.MultiHeadAttention.create({ ...create, threads: 1, backend: 'wasm' });
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }, i) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return [name, { data: filled(n, 11 + i, 1 / Math.sqrt(shape.at(-1))), shape }];
  })));
  return mha;
}

/** A contender for one case: run() times one call; output() is its last output. */
async function prefillCase(api, [L, E, h]) {
  const mha = await makeModule(api, { embedDim: E, numHeads: h });
  const x = { data: filled(L * E, 2, 1), shape: [1, L, E] };
  let last;
  return {
    async run() {
      const t0 = performance.now();
      last = (await mha.forward(x, x, x)).output.data;
      return performance.now() - t0;
    },
    output: () => last,
    dispose: () => mha.dispose(),
  };
}

async function decodeCase(api, [E, h, hkv, n, window], dtype) {
  // The storage options only when asked for: a build from before them refuses unknown options.
  const narrow = dtype !== REFERENCE_DTYPE;
  const mha = await makeModule(api, { embedDim: E, numHeads: h, numKvHeads: hkv, rotary: { base: 10000 },
    ...(narrow ? { weightsDtype: DTYPES[dtype].weights } : {}) });
  const drift = Math.max(8, n / 16);
  const cache = mha.createCache({ ...(window ? { window } : { maxLength: n + drift + 1 }),
    ...(narrow ? { dtype: DTYPES[dtype].cache } : {}) });
  const prompt = { data: filled(n * E, 3, 1), shape: [1, n, E] };
  const step = { data: filled(E, 4, 1), shape: [1, 1, E] };
  let last;
  const refill = async () => {
    cache.reset();
    await mha.forward(prompt, prompt, prompt, { cache });
  };
  await refill();
  return {
    async run() {
      if (cache.length >= n + drift) await refill();
      const t0 = performance.now();
      last = (await mha.forward(step, step, step, { cache })).output.data;
      return performance.now() - t0;
    },
    output: () => last,
    dispose: () => { cache.dispose(); mha.dispose(); },
  };
}

async function compare(label, make, apis, rounds) {
  const sides = [await make(apis[0]), await make(apis[1])];
  for (const s of sides) await s.run();
  const diff = maxAbsDiff(sides[0].output(), sides[1].output());
  const ms = [[], []];
  const ratios = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [1, 0] : [0, 1];
    const t = [];
    for (const i of order) t[i] = await sides[i].run();
    ms[0].push(t[0]);
    ms[1].push(t[1]);
    ratios.push(t[0] / t[1]);
  }
  sides.forEach((s) => s.dispose());
  console.log(`| ${label} | ${median(ms[0]).toFixed(3)} | ${median(ms[1]).toFixed(3)} | ${median(ratios).toFixed(3)} | ${diff.toExponential(1)} |`);
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '41' }, quick: { type: 'boolean', default: false },
    dtype: { type: 'string', default: 'f32' }, 'decode-only': { type: 'boolean', default: false },
    positions: { type: 'string' },
  },
});
if (positionals.length !== 2 || !Object.hasOwn(DTYPES, values.dtype)) {
  console.error('usage: node bench/versions_ab.mjs <package root A> <package root B> [--rounds N] [--quick] ' +
    `[--dtype ${Object.keys(DTYPES).join('|')}] [--decode-only] [--positions N,N,...]`);
  process.exit(2);
}
const apis = await Promise.all(positionals.map((root) => import(pathToFileURL(resolve(root, 'web/src/node.js')).href)));
const rounds = Number(values.rounds);
const caps = await apis[0].capabilities();
console.log(`A = ${positionals[0]}, B = ${positionals[1]}; module ${caps.wasmModule}, 1 thread, ${rounds} rounds, ` +
  `decode storage ${values.dtype}; ms are medians`);
console.log('| case | A ms | B ms | A/B | max abs diff |\n|---|---:|---:|---:|---:|');
for (const shape of values['decode-only'] ? [] : values.quick ? PREFILL.slice(0, 2) : PREFILL) {
  await compare(`prefill (L, E, h) = (${shape})`, (api) => prefillCase(api, shape), apis, Math.ceil(rounds / 2));
}
const decodeCases = values.positions
  ? DECODE_SHAPES.flatMap((s) => values.positions.split(',').map((n) => [...s, Number(n), 0]))
  : DECODE;
for (const shape of values.quick ? decodeCases.slice(0, 1) : decodeCases) {
  await compare(`decode (E, h, hkv) = (${shape.slice(0, 3)}), n = ${shape[3]}${shape[4] ? `, window ${shape[4]}` : ''}`, (api) => decodeCase(api, shape, values.dtype), apis, rounds * 3);
}
