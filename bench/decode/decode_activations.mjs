#!/usr/bin/env node
// Decode steps per token with int8 activations (create({ activations: 'int8' }), docs/attention-math/storage.md
// §11) against the weights' own float32-activation path: float32, int8 and int4 weights, each narrow
// one with float32 and with int8 activations, one process, the variants interleaved round by round
// (each round times `--steps` steps of every variant in turn; the table shows each variant's median
// round, and its fastest: on a shared machine the fastest round is the one least preempted). Every module has a float32 sliding-window cache of n positions, filled first, so that
// every step attends n keys and only the projections differ. One thread.
//
//   node bench/decode/decode_activations.mjs [--configs 2048,32,8;768,12,12] [--positions 128]
//                                            [--rounds 15] [--steps 20]
//
// Which WASM module runs: the package's choice, or WEBATTENTION_WASM=simd|relaxed|scalar. Weights and
// inputs are bench/decode/decode.mjs's (decode_suite.mjs), so E / h must be its head width.
import { HEAD_DIM, makeDecodeWeights, stateDict } from './decode_suite.mjs';
import { exitWithUsage, importBuiltPackage, parseFlags } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

/** The variants timed: create() options beside the shape. */
const VARIANTS = [
  { name: 'f32', options: {} },
  { name: 'int8', options: { weightsDtype: 'int8' } },
  { name: 'int8 + act8', options: { weightsDtype: 'int8', activations: 'int8' } },
  { name: 'int4', options: { weightsDtype: 'int4' } },
  { name: 'int4 + act8', options: { weightsDtype: 'int4', activations: 'int8' } },
];

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  configs: { type: 'string', default: '2048,32,8;768,12,12' },
  positions: { type: 'string', default: '128' },
  rounds: { type: 'string', default: '15' },
  steps: { type: 'string', default: '20' },
});
const n = Number(v.positions), rounds = Number(v.rounds), steps = Number(v.steps);
const configs = v.configs.split(';').map((c) => c.split(',').map(Number));
for (const [E, h] of configs) {
  if (E !== h * HEAD_DIM) exitWithUsage(import.meta.url, `--configs: E must be h · ${HEAD_DIM}, got ${E},${h}`);
}
const { MultiHeadAttention } = await importBuiltPackage();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

for (const [E, h, hkv] of configs) {
  const x = filled((n + 1) * E, 7 + E, 1);
  const rows = (from, to) => ({ data: x.subarray(from * E, to * E), shape: [1, to - from, E] });
  const weights = makeDecodeWeights({ E, h, hkv });
  const runs = [];
  for (const { name, options } of VARIANTS) {
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, threads: 1, backend: 'wasm', ...options });
    mha.loadStateDict(stateDict(mha.stateDictShapes, weights));
    const cache = mha.createCache({ batchSize: 1, window: n });
    await mha.forward(rows(0, n), rows(0, n), rows(0, n), { cache });
    const t = rows(n, n + 1);
    const step = () => mha.forward(t, t, t, { cache });
    for (let i = 0; i < 3 * steps; i++) await step();  // V8 optimises the kernels
    runs.push({ name, mha, step, ms: [] });
  }
  for (let round = 0; round < rounds; round++) {
    for (const run of runs) {
      const start = performance.now();
      for (let i = 0; i < steps; i++) await run.step();
      run.ms.push((performance.now() - start) / steps);
    }
  }
  const f32 = median(runs[0].ms), f32Best = Math.min(...runs[0].ms);
  console.log(`(${E}, ${h}, ${hkv}), n ${n}, window cache float32, 1 thread: ms per token, median and fastest of ${rounds} rounds × ${steps} steps`);
  for (const run of runs) {
    const ms = median(run.ms), best = Math.min(...run.ms);
    console.log(`  ${run.name.padEnd(12)} median ${ms.toFixed(3)} ms (${(f32 / ms).toFixed(2)}× f32)   fastest ${best.toFixed(3)} ms (${(f32Best / best).toFixed(2)}× f32)`);
    run.mha.dispose();
  }
}
