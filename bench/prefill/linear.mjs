// The projection kernel alone: one linear layer y = x Wᵀ + b over 1024 rows (the MHA's output
// projection, called through the core the way the worker pool does), for E = 256 … 1024, one
// thread. Shows how close the 4×8 f32x4 micro-kernel runs to the SIMD limit (bench/limits/simd_peak).
// Usage: node bench/prefill/linear.mjs
//        WEBATTENTION_WASM=relaxed node --experimental-wasm-relaxed-simd bench/prefill/linear.mjs
import { loadNodeCore } from '../../web/src/node_core.js';
import { coreConfig, resolveMhaConfig } from '../../web/src/checks/module_config.js';
import { WasmExecutor } from '../../web/src/wasm/wasm_executor.js';
import { perfCases } from '../../tests/cases/cases.mjs';
import { parseFlags } from '../lib/run_env.mjs';
import { filled } from '../lib/suite.mjs';

parseFlags(import.meta.url, process.argv.slice(2), {});  // no flags but --help

const variant = process.env.WEBATTENTION_WASM || 'simd';  // not auto-detected: simd unless asked
const { core } = await loadNodeCore(variant);
console.log(`module ${variant}`);

// The list's square layers (in = out = E): the MHA's output projection is E × E.
for (const { rows, in: E } of perfCases('linear', 'linear')) {
  const config = resolveMhaConfig({ embedDim: E, numHeads: E / 64 });
  const mha = new WasmExecutor(core, config, coreConfig(config));
  mha.loadStateDict(mha.parameterSpecs().map(({ name, shape }, i) =>
    ({ name, data: filled(shape.reduce((a, b) => a * b, 1), i + 1, 1 / Math.sqrt(E)) })));
  const x = filled(rows * E, 7, 1);
  for (let i = 0; i < 3; i++) mha.projectOutput(x, rows);
  const times = [];
  for (let i = 0; i < 21; i++) {
    const t0 = performance.now();
    mha.projectOutput(x, rows);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const gflop = (2 * rows * E * E) / 1e9;
  console.log(`linear [${rows}, ${E}] → [${rows}, ${E}]: median ${(gflop / times[10] * 1e3).toFixed(1)} GFLOP/s, best ${(gflop / times[0] * 1e3).toFixed(1)}`);
  mha.dispose();
}
