#!/usr/bin/env node
// Two builds of the package against each other in ONE Node process (a change's before and after):
// each package root is imported as its own ES module graph with its own WASM instance, and the
// contenders are timed interleaved (bench/ab/interleave.mjs: each round times every one once, in an
// order that rotates from round to round), so a slow spell of the machine hits them alike.
// Small call: (L, E, h) = (16, 64, 4), the per-call overhead, SMALL_CALLS calls per timing;
// prefill: a self-attention forward [1, L, E]; decode: one step (L = 1) of a KV cache that holds
// n positions (after `drift` steps it is reset and refilled, untimed). Prints each side's median
// ms and the median over rounds of (A ms / B ms): above 1, B is faster. Outputs are compared
// (max |A − B|) before timing.
//
//   node bench/ab/versions_ab.mjs <package root A> <package root B> [--rounds N] [--quick]
//                              [--dtype f32|f16|i8|i4|i8a8|i4a8] [--decode-only] [--positions N,N,...]
//   node bench/ab/versions_ab.mjs <package root A> <package root B> --prefill-dtypes [--rounds N] [--quick]
//
//   --rounds N        decode cases run 3N rounds, prefill ones ⌈N/2⌉ (default 41)
//   --quick           the first two prefill shapes and the first decode case only
//   --decode-only     no prefill cases
//   --positions       the decode cases become (768, 12, 12) and (2048, 32, 8) at each n given, no window
//   --dtype           the decode weights' and cache's storage (bench/decode/decode_dtypes.mjs), f32 unless
//                     given (f32 passes no storage option, so that a build from before them can be A)
//   --prefill-dtypes  prefill only, in each weights dtype (float32, float16, bfloat16, int8) of
//                     both builds, the eight interleaved; per build the median over rounds of
//                     (dtype ms / float32 ms of the same build and round), and per dtype max |A − B|
//   e.g. git worktree add ../before <commit> (and build it), then
//        node bench/ab/versions_ab.mjs ../before .
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { filled } from '../../tests/contract/random.mjs';
// --prefill-dtypes: every weightsDtype create() takes, float32 first (the others are divided by it).
import { WEIGHTS_DTYPES } from '../../web/src/storage/storage_types.js';
import { DTYPES, REFERENCE_DTYPE } from '../decode/decode_dtypes.mjs';
import { interleavedRounds, median, roundRatio } from './interleave.mjs';
import { exitWithUsage, loadAverage, parseFlags } from '../lib/run_env.mjs';

const SMALL = [16, 64, 4];
const SMALL_CALLS = 200;
const PREFILL = [[128, 512, 8], [512, 512, 8], [1024, 768, 12], [2048, 768, 12]];
// [E, h, hkv, n, window (0: none)]
const DECODE = [[768, 12, 12, 128, 0], [768, 12, 12, 2048, 0], [768, 12, 12, 2048, 256], [2048, 32, 8, 128, 0], [2048, 32, 8, 2048, 0]];
const DECODE_SHAPES = [[768, 12, 12], [2048, 32, 8]];  // with --positions

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
async function prefillCase(api, [L, E, h], weightsDtype = 'float32') {
  // The storage option only when asked for: a build from before it refuses unknown options.
  const mha = await makeModule(api, { embedDim: E, numHeads: h, ...(weightsDtype !== 'float32' ? { weightsDtype } : {}) });
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

/** The small call: SMALL_CALLS forwards per timing, so that one timing is well above the clock's step. */
async function smallCase(api) {
  const one = await prefillCase(api, SMALL);
  return {
    ...one,
    async run() {
      let ms = 0;
      for (let i = 0; i < SMALL_CALLS; i++) ms += await one.run();
      return ms;
    },
  };
}

async function decodeCase(api, [E, h, hkv, n, window], dtype) {
  // The storage options only when asked for: a build from before them refuses unknown options.
  const narrow = dtype !== REFERENCE_DTYPE;
  const mha = await makeModule(api, { embedDim: E, numHeads: h, numKvHeads: hkv, rotary: { base: 10000 },
    ...(narrow ? { weightsDtype: DTYPES[dtype].weights } : {}), ...(DTYPES[dtype].activations ? { activations: DTYPES[dtype].activations } : {}) });
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

/** contenders run once (a warm-up; their outputs kept for comparison), then timed interleaved. */
async function timeContenders(contenders, rounds) {
  for (const c of contenders) await c.run();
  const outputs = contenders.map((c) => c.output());
  const ms = await interleavedRounds(contenders.map((c) => c.run), rounds);
  contenders.forEach((c) => c.dispose());
  return { ms, outputs };
}

async function compare(label, make, apis, rounds) {
  const { ms, outputs } = await timeContenders([await make(apis[0]), await make(apis[1])], rounds);
  console.log(`| ${label} | ${median(ms[0]).toFixed(3)} | ${median(ms[1]).toFixed(3)} | ${roundRatio(ms[0], ms[1]).toFixed(3)} | `
    + `${maxAbsDiff(outputs[0], outputs[1]).toExponential(1)} |`);
}

/** --prefill-dtypes: one shape's row per weights dtype. */
async function compareDtypes(shape, apis, rounds) {
  const contenders = [];  // A's dtypes, then B's
  for (const api of apis) for (const dtype of WEIGHTS_DTYPES) contenders.push(await prefillCase(api, shape, dtype));
  const { ms, outputs } = await timeContenders(contenders, rounds);
  const b = WEIGHTS_DTYPES.length;  // B's float32
  const perF32 = (k, f32) => roundRatio(ms[k], ms[f32]).toFixed(3);
  WEIGHTS_DTYPES.forEach((dtype, d) => {
    console.log(`| (${shape}) | ${dtype} | ${median(ms[d]).toFixed(1)} | ${median(ms[b + d]).toFixed(1)} | ${perF32(d, 0)} | ${perF32(b + d, b)} | `
      + `${maxAbsDiff(outputs[d], outputs[b + d]).toExponential(1)} |`);
  });
}

const usage = (error) => exitWithUsage(import.meta.url, error);
const { values, positionals } = parseFlags(import.meta.url, process.argv.slice(2), {
  rounds: { type: 'string', default: '41' }, quick: { type: 'boolean', default: false },
  dtype: { type: 'string' }, 'decode-only': { type: 'boolean', default: false },
  positions: { type: 'string' }, 'prefill-dtypes': { type: 'boolean', default: false },
}, { allowPositionals: true });
const rounds = Number(values.rounds);
const dtype = values.dtype ?? REFERENCE_DTYPE;
const positions = values.positions?.split(',').map(Number);
if (positionals.length !== 2) usage(`expected two package roots, got ${positionals.length}`);
if (!Number.isInteger(rounds) || rounds < 1) usage(`--rounds: expected an integer >= 1, got '${values.rounds}'`);
if (!Object.hasOwn(DTYPES, dtype)) usage(`--dtype: expected one of ${Object.keys(DTYPES).join(', ')}, got '${dtype}'`);
if (positions?.some((n) => !Number.isInteger(n) || n < 1)) usage(`--positions: expected integers >= 1, got '${values.positions}'`);
if (values['prefill-dtypes'] && (values['decode-only'] || positions || values.dtype)) {
  usage('--prefill-dtypes times prefill in every weights dtype: it takes no --decode-only, --positions or --dtype');
}

const apis = await Promise.all(positionals.map((root) => import(pathToFileURL(resolve(root, 'web/src/node.js')).href)));
const caps = await apis[0].capabilities();
const prefillShapes = values.quick ? PREFILL.slice(0, 2) : PREFILL;
console.log(`A = ${positionals[0]}, B = ${positionals[1]}; module ${caps.wasmModule}, 1 thread, ${rounds} rounds, `
  + `${values['prefill-dtypes'] ? 'prefill per weights dtype' : `decode storage ${dtype}`}; ms are medians; load average ${loadAverage()}`);
if (values['prefill-dtypes']) {
  console.log('| (L, E, h) | weights | A ms | B ms | A: ÷ f32 | B: ÷ f32 | max abs diff |\n|---|---|---:|---:|---:|---:|---:|');
  for (const shape of prefillShapes) await compareDtypes(shape, apis, Math.ceil(rounds / 2));
} else {
  console.log('| case | A ms | B ms | A/B | max abs diff |\n|---|---:|---:|---:|---:|');
  if (!values['decode-only']) {
    await compare(`small call (L, E, h) = (${SMALL}), ${SMALL_CALLS} calls`, smallCase, apis, rounds);
  }
  for (const shape of values['decode-only'] ? [] : prefillShapes) {
    await compare(`prefill (L, E, h) = (${shape})`, (api) => prefillCase(api, shape), apis, Math.ceil(rounds / 2));
  }
  const decodeCases = positions ? DECODE_SHAPES.flatMap((s) => positions.map((n) => [...s, n, 0])) : DECODE;
  for (const shape of values.quick ? decodeCases.slice(0, 1) : decodeCases) {
    await compare(`decode (E, h, hkv) = (${shape.slice(0, 3)}), n = ${shape[3]}${shape[4] ? `, window ${shape[4]}` : ''}`,
      (api) => decodeCase(api, shape, dtype), apis, rounds * 3);
  }
}
console.log(`load average after: ${loadAverage()}`);
