// The projection kernel alone: one linear layer y = x Wᵀ + b over 1024 rows (the MHA's output
// projection, called through the core the way the worker pool does), for E = 256 … 1024, one
// thread. Shows how close the 4×8 f32x4 micro-kernel runs to the SIMD limit (bench/simd_peak).
// Usage: node bench/linear.mjs
//        WEBATTENTION_WASM=relaxed node --experimental-wasm-relaxed-simd bench/linear.mjs
import { readFile } from 'node:fs/promises';
import { WasmMha, instantiateCore } from '../web/src/wasm_backend.js';
import { filled } from './suite.mjs';

const dist = new URL('../web/dist/', import.meta.url);
const name = { simd: 'webattention_core', relaxed: 'webattention_core_relaxed' }[process.env.WEBATTENTION_WASM || 'simd'];
if (!name) throw new Error('WEBATTENTION_WASM: simd or relaxed');
const { default: create } = await import(new URL(`${name}.mjs`, dist).href);
const core = await instantiateCore(create, await WebAssembly.compile(await readFile(new URL(`${name}.wasm`, dist))));
console.log(`module ${name}`);

const rows = 1024;
for (const E of [256, 512, 768, 1024]) {
  const config = { embedDim: E, numHeads: E / 64, kdim: E, vdim: E, headDim: 64, valueHeadDim: 64, bias: true };
  const mha = new WasmMha(core, config);
  mha.loadStateDict(mha.parameterSpecs().map(({ name, shape }, i) =>
    ({ name, data: filled(shape.reduce((a, b) => a * b, 1), i + 1, 1 / Math.sqrt(E)) })));
  const x = filled(rows * E, 7, 1);
  for (let i = 0; i < 3; i++) mha.projectOutput(x, rows, config);
  const times = [];
  for (let i = 0; i < 21; i++) {
    const t0 = performance.now();
    mha.projectOutput(x, rows, config);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const gflop = (2 * rows * E * E) / 1e9;
  console.log(`linear [${rows}, ${E}] → [${rows}, ${E}]: median ${(gflop / times[10] * 1e3).toFixed(1)} GFLOP/s, best ${(gflop / times[0] * 1e3).toFixed(1)}`);
  mha.dispose();
}
