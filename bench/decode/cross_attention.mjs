#!/usr/bin/env node
// A decoder's cross-attention step over an encoder's output (issue 38: "an encoder step at (E 768,
// 1500 encoder positions, Whisper-base-like) against projecting K/V every step"): the median time
// of forward(token, null, null, { cache: encoded }) (mha.encode() projected the keys and values
// once) against forward(token, encoderOutput, encoderOutput) (the full cross-attention, which
// projects 1500 keys and values again every step), interleaved step by step, one thread.
//
//   bash scripts/build.sh                        (once: web/dist)
//   node bench/decode/cross_attention.mjs [--config E,h] [--positions 1500] [--steps 40] [--dtype float32]
import { importBuiltPackage, parseFlags } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  config: '768,12',
  positions: '1500',
  steps: '40',
  dtype: 'float32',
});
const [E, h] = v.config.split(',').map(Number);
const S = Number(v.positions), steps = Number(v.steps);
const { MultiHeadAttention } = await importBuiltPackage();

const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, threads: 1 });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) =>
  [name, { data: filled(shape.reduce((a, b) => a * b, 1), name.length), shape }])));
const encoderOutput = { data: filled(S * E, 7), shape: [1, S, E] };
const t0 = performance.now();
const encoded = await mha.encode(encoderOutput, encoderOutput, { dtype: v.dtype });
const encodeMs = performance.now() - t0;
const token = { data: filled(E, 3), shape: [1, 1, E] };

const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
const [cached, full] = [[], []];
for (let i = 0; i <= steps; i++) {
  let t = performance.now();
  await mha.forward(token, null, null, { cache: encoded });
  if (i > 0) cached.push(performance.now() - t);
  t = performance.now();
  await mha.forward(token, encoderOutput, encoderOutput);
  if (i > 0) full.push(performance.now() - t);
}
const [c, f] = [median(cached), median(full)];
console.log(`cross-attention step, E ${E}, h ${h}, ${S} encoder positions, one thread (${steps} steps each, interleaved):`);
console.log(`  encoded cache (${v.dtype}): ${c.toFixed(3)} ms/step; full forward (projects K/V each step): ${f.toFixed(2)} ms/step;`
  + ` ratio ${(f / c).toFixed(1)}x; encode() once: ${encodeMs.toFixed(1)} ms`);
encoded.dispose();
mha.dispose();
