#!/usr/bin/env node
// Cross-attention decoder steps (mha.encode(), docs/webgpu/tensors.md#cross-attention-on-the-gpu): the
// encoded cache on the GPU against one on WASM (where a WebGPU module used to keep it), at a
// Whisper-like shape.
//
//   VK_ICD_FILENAMES=<a GPU's Vulkan ICD .json> node bench/gpu/gpu_cross_attention.mjs [--quick] [--steps-ms MS]
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/gpu/gpu_cross_attention.mjs --quick
//
// Default: E 1024, 16 heads, an encoder output of 1500 positions (Whisper's 30 s), batch 1, float32
// and float16 caches. Per cache: the encode's ms (first, then median of 3), then one-row steps
// (host query, host result: what a token's logits need) timed for --steps-ms, median and best ms,
// and max |Δ| of the GPU steps' outputs against WASM's. --quick: E 64, 4 heads, 100 positions.
import { benchAdapter } from './gpu_adapter.mjs';
import { MultiHeadAttention } from '../../web/src/node.js';
import { filled, makeWeights, maxAbsDiff } from '../lib/suite.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const stepsMs = args.includes('--steps-ms') ? Number(args[args.indexOf('--steps-ms') + 1]) : quick ? 2000 : 5000;
const { E, h, S } = quick ? { E: 64, h: 4, S: 100 } : { E: 1024, h: 16, S: 1500 };

const { gpu, info } = await benchAdapter();
console.log(`adapter: ${JSON.stringify({ vendor: info.vendor, architecture: info.architecture, description: info.description })}`);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const encoderOutput = { data: filled(S * E, 5), shape: [1, S, E] };
const token = { data: filled(E, 6), shape: [1, 1, E] };

async function timed(fn) {
  const t0 = performance.now();
  const result = await fn();
  return { ms: performance.now() - t0, result };
}

for (const dtype of ['float32', 'float16']) {
  const rows = {};
  for (const backend of ['wasm', 'webgpu']) {
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, backend, gpu, threads: 1 });
    mha.loadStateDict(makeWeights(E));
    const encodes = [];
    let encoded = null;
    for (let i = 0; i < 4; i++) {
      encoded?.dispose();
      const { ms, result } = await timed(() => mha.encode(encoderOutput, encoderOutput, { dtype }));
      encodes.push(ms);
      encoded = result;
    }
    const steps = [];
    let last = null;
    for (const end = performance.now() + stepsMs; performance.now() < end || steps.length < 5;) {
      const { ms, result } = await timed(() => mha.forward(token, null, null, { cache: encoded }));
      steps.push(ms);
      last = result.output.data;
    }
    rows[backend] = { encodeFirst: encodes[0], encode: median(encodes.slice(1)), step: median(steps), best: steps.reduce((a, b) => Math.min(a, b)), n: steps.length, last };
    encoded.dispose();
    mha.dispose();
  }
  const diff = maxAbsDiff(rows.wasm.last, rows.webgpu.last);
  for (const [backend, r] of Object.entries(rows)) {
    console.log(`${dtype} cache, ${backend.padEnd(6)} (${E}, ${h}, S ${S}): encode ${r.encodeFirst.toFixed(1)} ms first, ${r.encode.toFixed(1)} median; `
      + `step ${r.step.toFixed(3)} ms median, ${r.best.toFixed(3)} best, ${r.n} steps${backend === 'webgpu' ? `; max |Δ| vs WASM ${diff.toExponential(2)}` : ''}`);
  }
}
process.exit(0);
