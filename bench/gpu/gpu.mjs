#!/usr/bin/env node
// The WebGPU profile bench: every kernel variant (selection/kernel_config.js's catalogue) timed alone, and
// the whole forward host to host, on the machine's GPU through npm `webgpu` (Dawn).
//
//   node bench/gpu/gpu.mjs [--quick | --smoke] [--json]
//   VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/nvidia_icd.json node bench/gpu/gpu.mjs   (an NVIDIA GPU)
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node bench/gpu/gpu.mjs --quick  (a check on the CPU)
//
// Prints the adapter (info, features, limits), then per shape (L, E, h), batch 1, self-attention:
//   - linear: each variant on the Q/K/V projection (L × 3E × E), the output projection
//     (L × E × E) and a decode step's Q/K/V projection (1 × 3E × E), and rows8 (rows8sg) alone on that one
//     with each narrow weights dtype (W's random bits as it stores them); each variant that fits the rows (rows8: at most 4); ms per
//     dispatch, GFLOP/s (2·M·N·K), GB/s (X, W as stored and Y once), compile ms and
//     max |Δ| against the first variant (the default) on the same inputs;
//   - attention: each flash variant, not causal and causal (GFLOP/s over the keys each row
//     attends: 4·L·S·E, about half with causal); GB/s: Q, K, V and the output once;
//   - decode: each decode variant for one query row against S = L keys;
//   - transfer: the floor of a call's traffic with no kernel (writeBuffer of the input, a copy
//     into a MAP_READ buffer of the output's size, mapAsync, the copy out of the mapped range);
//   - forward: MultiHeadAttention.forward host to host (upload, kernels, readback) with the
//     default variants pinned, with the fastest variants of this run pinned, and unpinned (the
//     selection by measurement), each: create() ms, first call ms, median ms, GFLOP/s
//     (8·L·E² + 4·L²·E); and for the fastest, where a call's time goes (phases: the pass's
//     phases as forward_pass.js's passHooks reports them, the GPU's own time, the rest outside);
// and the linear variants alone at 4096³, then with activations 'int8' each q8linear variant on
// int8 and int4 weights (the rows' quantiser included) and its speed-up over the fastest float32
// one (issue 39's target: 1.5×).
//
//   node bench/gpu/gpu.mjs --decode [--quick] [--json] [--markdown]
// instead times decode over a KV cache per storage dtype (f32, f16, int8: weights and cache alike; i8a8, i4a8 with int8 activations,
// bench/decode/decode_dtypes.mjs) at bench/decode/decode.mjs's configurations (768, 12, 12) and (2048, 32, 8)
// with n = 2048 and 8192 cached positions: per dtype one prefill (its weightsDtype's), then per n
// the median one-token step, its GB/s (the bytes a step must read, stepBytes()) and max|Δ| against
// float32 (profileDecodeSteps(), gpu_forward.mjs). --quick: (128, 2, 1) at n = 32, 128. Times are the GPU's timestamps where the adapter has
// 'timestamp-query' (else wall time); every loop is bounded by time, the full run by about 3 min
// on an H100. --quick: two small shapes and 256³ (for a software adapter). --json: one JSON
// object per line instead of the table. --markdown (with --decode): also the decode steps as a
// Markdown table at the end (docs/performance/platform.md#gpu).
import { benchAdapter } from './gpu_adapter.mjs';
import { profileAttention, profileDecode, profileLinear, profileQ8Linear } from './gpu_profiles.mjs';
import { timeTransfers } from './gpu_kernel_timing.mjs';
import { profileDecodeSteps, profileForward } from './gpu_forward.mjs';
import { CONFIGS, HEAD_DIM } from '../decode/decode_suite.mjs';
import { DTYPES, REFERENCE_DTYPE } from '../decode/decode_dtypes.mjs';
import { WEIGHTS_DTYPES } from '../../web/src/storage/storage_types.js';
import { DEFAULT_VARIANTS } from '../../web/src/webgpu/selection/kernel_config.js';

const args = process.argv.slice(2);
// --smoke: --quick on one tiny shape with the smallest budgets (tests/webgpu/node_gpu_benches.test.mjs:
// that the bench runs, not what it measures).
const smoke = args.includes('--smoke');
const quick = smoke || args.includes('--quick');
const json = args.includes('--json');

const SHAPES = smoke ? [[16, 32, 2]] : quick ? [[64, 64, 2], [128, 128, 2]] : [[128, 512, 8], [1024, 768, 12], [2048, 768, 12], [4096, 1024, 16], [16384, 768, 12]];
const NARROW_WEIGHTS = WEIGHTS_DTYPES.filter((dtype) => dtype !== 'float32');
const CUBE = smoke ? 32 : quick ? 256 : 4096;

const markdown = args.includes('--markdown');
const steps = [];
const print = (row) => {
  if (row.kind === 'step' && !row.error) steps.push(row);
  console.log(json ? JSON.stringify(row) : formatRow(row));
};
const fmt = (x, digits = 3) => (x === undefined || x === null ? '-' : Number(x).toFixed(digits));

function formatRow(r) {
  const what = `${r.kind.padEnd(9)} ${String(r.variant).padEnd(12)} ${r.shape.padEnd(26)}`;
  if (r.error) return `${what} ERROR ${r.error}`;
  if (r.kind === 'prefill') return `${what} ${fmt(r.ms, 2)} ms  ${fmt(r.gflops, 1)} GFLOP/s`;
  if (r.kind === 'step') {
    return `${what} median ${fmt(r.medianMs, 4)} ms  best ${fmt(r.bestMs, 4)} ms  ${fmt(r.gbps, 1).padStart(7)} GB/s  max|Δ| vs f32 ${r.maxAbsDiff === undefined ? '-' : r.maxAbsDiff.toExponential(1)}  (${r.steps} steps)`;
  }
  if (r.kind === 'transfer') return `${what} write ${fmt(r.write)}  map ${fmt(r.map)}  copyOut ${fmt(r.copyOut)}  total ${fmt(r.total)} ms`;
  if (r.kind === 'phases') {
    const names = ['total', 'outside', 'pipelines', 'encode', 'upload', 'prefault', 'map', 'scopes', 'copyOut', 'gpu'];
    return `${what} ${names.map((n) => `${n} ${fmt(r[n])}`).join('  ')} ms`;
  }
  if (r.kind === 'forward') {
    const chosen = r.profile?.map((c) => `${c.family}=${c.chosen ?? '?'}`).join(' ');
    return `${what} create ${fmt(r.createMs, 1)} ms  first ${fmt(r.firstMs, 1)} ms  median ${fmt(r.medianMs)} ms  ${fmt(r.gflops, 1)} GFLOP/s  ${r.kernels ?? ''}${r.selectionCalls ? `  (after ${r.selectionCalls} selection calls: ${chosen})` : ''}`;
  }
  return `${what} ${fmt(r.ms, 4)} ms  ${fmt(r.gflops, 1).padStart(8)} GFLOP/s  ${fmt(r.gbps, 1).padStart(7)} GB/s  compile ${fmt(r.compileMs, 1)} ms  max|Δ| ${r.maxAbsDiff === undefined ? '-' : r.maxAbsDiff.toExponential(1)}  (${r.runs} × ${r.batch}, ${r.clock})`;
}

const { gpu, adapter, info } = await benchAdapter();
const limitNames = ['maxComputeWorkgroupStorageSize', 'maxComputeInvocationsPerWorkgroup', 'maxStorageBufferBindingSize', 'maxBufferSize'];
const head = {
  kind: 'adapter', vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description,
  subgroupMinSize: info.subgroupMinSize, subgroupMaxSize: info.subgroupMaxSize,
  features: [...adapter.features].sort(), limits: Object.fromEntries(limitNames.map((n) => [n, adapter.limits[n]])),
  node: process.version, date: new Date().toISOString(), quick,
};
console.log(json ? JSON.stringify(head) : `adapter: ${JSON.stringify({ vendor: head.vendor, architecture: head.architecture, device: head.device, description: head.description })}\nfeatures: ${head.features.join(',')}\nlimits: ${JSON.stringify(head.limits)}`);
const requiredFeatures = ['timestamp-query', 'subgroups', 'shader-f16'].filter((f) => adapter.features.has(f));
const requiredLimits = Object.fromEntries(limitNames.filter((n) => n !== 'maxComputeInvocationsPerWorkgroup').map((n) => [n, adapter.limits[n]]));
const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
device.addEventListener?.('uncapturederror', (e) => console.log('GPU error:', e.error?.message));
device.lost.then((info) => {
  console.log(`DEVICE LOST (${info.reason}: ${info.message}): the run stops here`);
  process.exit(3);
});

const started = performance.now();
// --smoke: a family's first two variants (the default, which the others are checked against, and
// one checked): every variant runs the same code here, and SwiftShader compiles each for seconds.
const budget = smoke ? { kernelMs: 1, forwardMs: 1, selectionMs: 1, variants: 2 }
  : { kernelMs: quick ? 150 : 300, forwardMs: quick ? 500 : 1500, selectionMs: quick ? 2000 : 12000 };
const finish = () => {
  console.log(json ? JSON.stringify({ kind: 'done', seconds: (performance.now() - started) / 1000 }) : `done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  process.exit(0);  // (not device.destroy(): the lost handler above would report it)
};
if (args.includes('--decode')) {
  const decode = quick ? { configs: [{ E: 128, h: 2, hkv: 1 }], lengths: [32, 128] } : { configs: CONFIGS, lengths: [2048, 8192] };
  // --smoke: the reference dtype and the one whose module differs most from it (narrow weights and
  // cache, int8 activations); the bench's code is the same for every dtype.
  const dtypes = smoke ? [REFERENCE_DTYPE, 'i4a8'] : Object.keys(DTYPES);
  await profileDecodeSteps(gpu, { ...decode, dtypes, headDim: HEAD_DIM, budget }, print);
  if (markdown) {
    console.log('\n| weights:cache | shape | median ms | best ms | GB/s | max\\|Δ\\| vs f32 | steps |\n|---|---|---:|---:|---:|---:|---:|');
    for (const r of steps) {
      console.log(`| ${r.variant} | ${r.shape} | ${fmt(r.medianMs)} | ${fmt(r.bestMs)} | ${fmt(r.gbps, 1)} | ${r.maxAbsDiff === undefined ? '-' : r.maxAbsDiff.toExponential(1)} | ${r.steps} |`);
    }
  }
  finish();
}
for (const [L, E, h] of SHAPES) {
  const shape = { L, E, h };
  const best = {};
  best.linear = (await profileLinear(device, { M: L, N: 3 * E, K: E }, `qkv ${L}x${3 * E}x${E}`, budget, print)).fastest;
  await profileLinear(device, { M: L, N: E, K: E }, `out ${L}x${E}x${E}`, budget, print);
  // A decode step's Q/K/V projection (one row): the few-rows variant (rows8) against the tiled
  // ones, then rows8 and rows8sg on each narrow weights dtype against the default (what a batched
  // step runs: it never measures), GB/s of the bytes each stores.
  await profileLinear(device, { M: 1, N: 3 * E, K: E }, `qkv 1x${3 * E}x${E}`, budget, print);
  for (const weights of NARROW_WEIGHTS) {
    await profileLinear(device, { M: 1, N: 3 * E, K: E, weights, only: [DEFAULT_VARIANTS.linear[0], 'rows8', 'rows8sg'] }, `qkv 1x${3 * E}x${E} ${weights}`, budget, print);
  }
  for (const causal of [false, true]) {
    const fastest = (await profileAttention(device, shape, causal, budget, print)).fastest;
    if (!causal) best.attention = fastest;
  }
  await profileDecode(device, shape, budget, print);
  print({ kind: 'transfer', variant: 'no kernel', shape: `in ${L}x${E} out ${L}x${E}`, ...await timeTransfers(device, L * E, L * E) });
  await profileForward(gpu, shape, best, budget, print);
}
const cube = await profileLinear(device, { M: CUBE, N: CUBE, K: CUBE }, `cube ${CUBE}^3`, budget, print);
// The integer product at the same size (activations 'int8': the rows quantised, then dot4I8Packed
// where WGSL has it), against the fastest float32 variant above.
const dot = gpu.wgslLanguageFeatures?.has?.('packed_4x8_integer_dot_product') ? 'dot4' : 'loop';
// --smoke: that it runs, one dtype and the default variant (SwiftShader compiles each for seconds).
const only = smoke ? DEFAULT_VARIANTS.q8linear : undefined;
for (const weights of smoke ? ['int8'] : ['int8', 'int4']) {
  const q8 = await profileQ8Linear(device, { M: CUBE, N: CUBE, K: CUBE, weights, dot, only }, `cube ${CUBE}^3 ${weights} ${dot}`, budget, print);
  const ratio = { kind: 'ratio', variant: q8.fastest, shape: `cube ${CUBE}^3 ${weights}`, f32: cube.fastest, speedup: cube.ms / q8.ms };
  console.log(json ? JSON.stringify(ratio) : `ratio     ${String(q8.fastest).padEnd(12)} ${ratio.shape.padEnd(26)} ${fmt(ratio.speedup, 2)}× the fastest float32 variant (${cube.fastest})`);
}
finish();
