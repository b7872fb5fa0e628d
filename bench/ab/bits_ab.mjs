#!/usr/bin/env node
// Whether two builds compute the same bits: for a kernel change that claims to keep every
// operation's order (a loop regrouped, streams reordered), each build's decode steps and a short
// prefill are run on the same weights and inputs, for every weights dtype and activations mode, and
// their outputs compared bit for bit. Prints each case's count of differing values; exits 1 if any.
//
//   node bench/ab/bits_ab.mjs ROOT_A ROOT_B [--shapes 2048/32/8,320/5/5,192/3/1] [--steps 6] [--prefill 37]
//        [--threads N]
//
// Every setting (SETTINGS below) decodes over a float32 cache, and over its narrow cache where it has one.
// --prefill: the positions cached before the steps (37: an odd count of 8-slot panels).
//
// ROOT_A, ROOT_B: package roots, each with its own web/dist (e.g. `git worktree add /tmp/base
// HEAD`, then its build). The module is each root's package choice, or WEBATTENTION_WASM's (Node
// runs the relaxed ones with --experimental-wasm-relaxed-simd; mt and mt-relaxed with --threads 2).
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { DTYPES } from '../decode/decode_dtypes.mjs';
import { HEAD_DIM, makeDecodeWeights, rows, stateDict } from '../decode/decode_suite.mjs';
import { parseFlags, exitWithUsage } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

const { values: v, positionals } = parseFlags(import.meta.url, process.argv.slice(2), {
  shapes: '2048/32/8,320/5/5,192/3/1',
  steps: '6',
  prefill: '37',
  threads: '1',
}, { allowPositionals: true });
if (positionals.length !== 2) exitWithUsage(import.meta.url, 'expected two package roots, ROOT_A and ROOT_B');
// decode_dtypes.mjs's storage settings, each over a float32 cache and over its own cache dtype,
// and bfloat16 weights (which that list leaves out).
const SETTINGS = [
  ...Object.values(DTYPES).flatMap(({ weights, cache, activations }) => {
    const setting = { weightsDtype: weights, ...(activations && { activations }) };
    return cache === 'float32' ? [setting] : [setting, { ...setting, cacheDtype: cache }];
  }),
  { weightsDtype: 'bfloat16' },
];
const PREFILL = Number(v.prefill);

/** One build's outputs for a shape and setting: the prefill's, then each decode step's. */
async function outputs(MultiHeadAttention, { E, h, hkv }, { cacheDtype = 'float32', ...setting }, steps) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, backend: 'wasm',
    threads: Number(v.threads), ...setting });
  mha.loadStateDict(stateDict(mha.stateDictShapes, makeDecodeWeights({ E, h, hkv })));
  const cache = mha.createCache({ batchSize: 1, maxLength: PREFILL + steps, dtype: cacheDtype });
  const x = filled((PREFILL + steps) * E, 3 + E, 1);
  const out = [];
  for (const [from, to] of [[0, PREFILL], ...Array.from({ length: steps }, (_, i) => [PREFILL + i, PREFILL + i + 1])]) {
    const t = rows(x, E, from, to);
    const { data } = (await mha.forward(t, t, t, { cache })).output;  // a new array per call
    out.push(new Uint32Array(data.buffer, data.byteOffset, data.length));
  }
  mha.dispose();
  return out;
}

const packages = [];
for (const root of positionals) packages.push(await import(pathToFileURL(resolve(root, 'web/src/node.js')).href));
let differing = 0;
for (const text of v.shapes.split(',')) {
  const [E, h, hkv] = text.split('/').map(Number);
  if (E !== h * HEAD_DIM) exitWithUsage(import.meta.url, `--shapes: E must be h · ${HEAD_DIM}, got ${text}`);
  for (const setting of SETTINGS) {
    const runs = [];
    for (const p of packages) runs.push(await outputs(p.MultiHeadAttention, { E, h, hkv }, setting, Number(v.steps)));
    let diff = 0, total = 0;
    runs[0].forEach((o, i) => o.forEach((bits, j) => { total++; if (bits !== runs[1][i][j]) diff++; }));
    differing += diff;
    console.log(`${text} ${JSON.stringify(setting)}: ${diff} of ${total} values differ`);
  }
}
console.log(differing ? `${differing} values differ` : 'the same bits');
process.exit(differing ? 1 : 0);
