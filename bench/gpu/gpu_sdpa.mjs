#!/usr/bin/env node
// scaledDotProductAttention() on the GPU (docs/webgpu/tensors.md#attention-without-a-module-on-the-gpu):
// per shape, the call host to host (host tensors in, arrays back) and on the device (GPU tensors
// in, 'gpu-buffer' out, timed to the queue's onSubmittedWorkDone()), beside the same call on WASM
// (one thread), with max |Δ| against WASM. PyTorch's F.scaled_dot_product_attention on the same
// card: bench/gpu/torch_sdpa.py with the same shapes.
//
//   VK_ICD_FILENAMES=<a GPU's Vulkan ICD .json> node bench/gpu/gpu_sdpa.mjs [--quick] [--ms MS]
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/gpu/gpu_sdpa.mjs --quick
//
// Shapes [N, L, d] (N = batch × heads): 12 × (1024, 2048, 4096) and 16 × 8192 rows of width 64,
// causal and not. --quick: 4 × 128 × 32 only. --ms: the time each row's calls take (default 3000).
import { benchAdapter } from './gpu_adapter.mjs';
import { scaledDotProductAttention as sdpa } from '../../web/src/node.js';
import { filled, maxAbsDiff } from '../lib/suite.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const budgetMs = args.includes('--ms') ? Number(args[args.indexOf('--ms') + 1]) : quick ? 1000 : 3000;
const shapes = quick ? [[4, 128, 32]] : [[12, 1024, 64], [12, 2048, 64], [12, 4096, 64], [16, 8192, 64]];

const { adapter, info } = await benchAdapter();
const device = await adapter.requestDevice({ requiredLimits: { maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize, maxBufferSize: adapter.limits.maxBufferSize } });
console.log(`adapter: ${JSON.stringify({ vendor: info.vendor, architecture: info.architecture, description: info.description })}`);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

// ms of `call` (after one untimed call): median and best over the budget (at least 3 calls).
async function timed(call, ms = budgetMs) {
  await call();
  const times = [];
  for (const end = performance.now() + ms; performance.now() < end || times.length < 3;) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return { median: median(times), best: Math.min(...times), n: times.length };
}

const onGpu = ({ data, shape }) => {
  const gpuBuffer = device.createBuffer({ size: data.byteLength, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(gpuBuffer, 0, data);
  return { gpuBuffer, shape };
};

console.log('| [N, L, d] | causal | GFLOP | WASM ms | GPU host to host ms | GPU on device ms | on device GFLOP/s | max |Δ| vs WASM |');
console.log('|---|---|---:|---:|---:|---:|---:|---:|');
for (const [N, L, d] of shapes) {
  const x = { data: filled(N * L * d, 3), shape: [N, L, d] };
  const xg = onGpu(x);
  for (const isCausal of [false, true]) {
    const gflop = (4 * N * L * L * d) / (isCausal ? 2 : 1) / 1e9;
    // WASM's time only where it is affordable (a call of over 40 GFLOP takes seconds on one thread).
    const wasmResult = gflop < 40 ? await sdpa(x, x, x, { isCausal }) : null;
    const wasm = wasmResult ? await timed(() => sdpa(x, x, x, { isCausal }), budgetMs / 2) : null;
    const options = { isCausal, backend: 'webgpu', gpu: device };
    const hostToHost = await timed(() => sdpa(x, x, x, options));
    const onDevice = await timed(async () => {
      const { output } = await sdpa(xg, xg, xg, { ...options, output: 'gpu-buffer' });
      await device.queue.onSubmittedWorkDone();
      output.dispose();
    });
    const gpuOut = (await sdpa(x, x, x, options)).output.data;
    const diff = wasmResult ? maxAbsDiff(wasmResult.output.data, gpuOut).toExponential(1) : 'n/a';
    console.log(`| [${N}, ${L}, ${d}] | ${isCausal} | ${gflop.toFixed(2)} | ${wasm ? wasm.median.toFixed(2) : 'n/a'} | ${hostToHost.median.toFixed(2)} `
      + `| ${onDevice.median.toFixed(2)} | ${(gflop / onDevice.median * 1e3).toFixed(0)} | ${diff} |`);
  }
  xg.gpuBuffer.destroy();
}
process.exit(0);
