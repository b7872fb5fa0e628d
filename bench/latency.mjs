// Cold start (fresh process: import → first result, 128×512, h = 8) and small-input latency
// (L = 16, E = 64, h = 4: per-call overhead). Usage: node bench/latency.mjs
import { spawnSync } from 'node:child_process';

const coldScript = `
const t0 = performance.now();
const { MultiHeadAttention } = await import(${JSON.stringify(new URL('../web/src/node.js', import.meta.url).href)});
const mha = await MultiHeadAttention.create({ embedDim: 512, numHeads: 8 });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01)])));
const x = { data: new Float32Array(128 * 512).fill(0.5), shape: [1, 128, 512] };
await mha.forward(x, x, x);
console.log(performance.now() - t0);`;

const cold = [];
for (let i = 0; i < 7; i++) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', coldScript], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  cold.push(Number(r.stdout.trim()));
}
cold.sort((a, b) => a - b);
console.log(`cold start, import → first result (128, 512, 8): median ${cold[3].toFixed(1)} ms (min ${cold[0].toFixed(1)}, max ${cold[6].toFixed(1)})`);

const { MultiHeadAttention } = await import('../web/src/node.js');
const mha = await MultiHeadAttention.create({ embedDim: 64, numHeads: 4 });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01)])));
const x = { data: new Float32Array(16 * 64).fill(0.5), shape: [1, 16, 64] };
for (let i = 0; i < 2000; i++) await mha.forward(x, x, x);  // warm up (V8 tiers up to TurboFan)
const batches = [];
for (let b = 0; b < 15; b++) {
  const n = 2000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await mha.forward(x, x, x);
  batches.push(((performance.now() - t0) / n) * 1000);
}
batches.sort((a, b) => a - b);
console.log(`small input (16, 64, 4): median ${batches[7].toFixed(1)} µs per forward (min ${batches[0].toFixed(1)})`);
