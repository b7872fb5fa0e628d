// bench/gpu/gpu.mjs's per-kernel profiles: each variant of a family that fits the device, on the
// same random inputs, timed (gpu_kernel_timing.mjs) and checked against the family's first
// variant (the default). Each returns { fastest: variant name }.
import { fittingVariants } from '../../web/src/webgpu/programs.js';
import { ATTENTION_PARAMS } from '../../web/src/webgpu/kernels/attention_common.wgsl.js';
import { LINEAR_PARAMS } from '../../web/src/webgpu/kernels/linear_common.wgsl.js';
import { VALUES_PER_WORD, wordsOf } from '../../web/src/webgpu/kernels/packed_values.wgsl.js';
import { Q8_BLOCK, STORAGE_TYPES } from '../../web/src/storage/storage_types.js';
import { blocksPerRow } from '../../web/src/storage/q8_0.js';
import { Q8_ROWS_PARAMS } from '../../web/src/webgpu/kernels/q8_rows.wgsl.js';
import { q8RowsGrid } from '../../web/src/webgpu/q8_projection.js';
import { DEFAULT_VARIANTS } from '../../web/src/webgpu/selection/kernel_config.js';
import { VARIANTS } from '../../web/src/webgpu/programs.js';
import {
  compiledPipeline, maxAbsDiff, preparedKernel, randomBuffer, randomWordsBuffer, readBack, timeKernel, zeroBuffer,
} from './gpu_kernel_timing.mjs';

const cdiv = (a, b) => Math.ceil(a / b);

// Times every variant (budget.variants: the first so many, when given): make(variant) resolves to
// { kernel, compileMs, output: () => Promise<Float32Array> }. Returns { fastest: its name, ms: its time }.
async function profileVariants(device, variants, make, row, budget, print) {
  let reference = null;
  let fastest = null;
  for (const variant of variants.slice(0, budget.variants)) {
    try {
      const { kernel, compileMs, output } = await make(variant);
      const probe = await timeKernel(device, kernel, { batch: 1, minRuns: 1, maxRuns: 1, budgetMs: 0 });
      const batch = Math.max(1, Math.min(20, Math.floor(20 / Math.max(probe.ms, 1e-3))));
      const timing = await timeKernel(device, kernel, { batch, budgetMs: budget.kernelMs });
      const out = await output();
      let maxAbs;
      if (reference) maxAbs = maxAbsDiff(out, reference);
      else reference = out;
      kernel.destroy();
      const r = { variant: variant.name, ...timing, batch, compileMs, maxAbsDiff: maxAbs, ...row(timing.ms) };
      print(r);
      if (!fastest || r.ms < fastest.ms) fastest = r;
    } catch (e) {
      print({ ...row(NaN), variant: variant.name, error: String(e?.message ?? e) });
    }
  }
  return { fastest: fastest?.variant, ms: fastest?.ms };
}

// Bytes per weight of each weightsDtype as the GPU stores it: its bits, and in blocks a float32
// scale (int4: and a 4-bit zero point) per block.
const weightBytes = (weights) => {
  const { bits, block } = STORAGE_TYPES.find((t) => t.name === weights);
  return bits / 8 + (block ? (4 + (weights === 'int4' ? 0.5 : 0)) / block : 0);
};

// The top exponent bit of each 16-bit half cleared: float16 and bfloat16 values below 2, finite.
const FINITE_HALVES = 0xbfffbfff;

// W of `weights` with random bits (finite; timing and a max |Δ| between variants: words, scales and
// zero points as the kernels bind them after Y, linear_common.wgsl.js's bindings 2, 5 and 6).
function weightBuffers(device, weights, N, K) {
  if (weights === 'float32') return { w: randomBuffer(device, N * K, 2, 1 / Math.sqrt(K)), blocks: [] };
  const mask = VALUES_PER_WORD[weights] === 2 ? FINITE_HALVES : 0xffffffff;
  const w = randomWordsBuffer(device, wordsOf(weights, N * K), 2, mask);
  const scaleCount = N * blocksPerRow(K);
  const blocks = weights === 'int8' ? [randomBuffer(device, scaleCount, 5, 0.01)]
    : weights === 'int4' ? [randomBuffer(device, scaleCount, 5, 0.01), randomWordsBuffer(device, wordsOf('int4', scaleCount), 6)] : [];
  return { w, blocks };
}

/** The linear variants (those named in `only`, when given) on Y[M, N] = X[M, K] · W[N, K]ᵀ + b, W stored as `weights`. */
export async function profileLinear(device, { M, N, K, weights = 'float32', only }, shape, budget, print) {
  const x = randomBuffer(device, M * K, 1);
  const { w, blocks } = weightBuffers(device, weights, N, K);
  const b = randomBuffer(device, N, 3, 0.1);
  const y = zeroBuffer(device, M * N);
  const values = { M, N, K, xStride: K, yStride: N };  // the uniforms; the dtype is the pipeline's
  const problem = { ...values, weights };
  const row = (ms) => ({
    kind: 'linear', shape, ms, gflops: (2 * M * N * K) / ms / 1e6, gbps: ((M * K + M * N) * 4 + N * K * weightBytes(weights)) / ms / 1e6,
  });
  const make = async (variant) => {
    const { pipeline, compileMs } = await compiledPipeline(device, variant, problem);
    const kernel = preparedKernel(device, [{ pipeline, params: LINEAR_PARAMS, values, bindings: [x, w, b, y, ...blocks], groups: variant.grid(problem) }]);
    return { kernel, compileMs, output: () => readBack(device, y, M * N) };
  };
  // precision 'float16': the float16-arithmetic variants too, where the device has 'shader-f16'.
  const variants = fittingVariants('linear', device, { ...problem, rows: M, precision: 'float16' }).filter((v) => !only || only.includes(v.name));
  const result = await profileVariants(device, variants, make, row, budget, print);
  [x, w, b, y, ...blocks].forEach((buf) => buf.destroy());
  return result;
}

/**
 * With activations 'int8' (q8_projection.js): each q8linear variant on Y[M, N] = X[M, K] · W[N, K]ᵀ
 * + b, W stored as `weights` ('int8' | 'int4'), timed with the rows' quantiser before it (the
 * default q8rows variant), as a projection runs; GOP/s over 2·M·N·K. dot: 'dot4' where the GPU
 * object's WGSL has packed_4x8_integer_dot_product, else 'loop'; only: the variants' names, when given.
 */
export async function profileQ8Linear(device, { M, N, K, weights, dot, only }, shape, budget, print) {
  const perRow = blocksPerRow(K);
  const x = randomBuffer(device, M * K, 1);
  const { w, blocks } = weightBuffers(device, weights, N, K);
  const b = randomBuffer(device, N, 3, 0.1);
  const y = zeroBuffer(device, M * N);
  const codes = zeroBuffer(device, (M * perRow * Q8_BLOCK) / 4);
  const rowScales = zeroBuffer(device, M * perRow);
  const values = { M, N, K, xStride: K, yStride: N };
  const problem = { dtype: weights, dot };
  const quantiser = VARIANTS.q8rows[DEFAULT_VARIANTS.q8rows[0]];
  const row = (ms) => ({
    kind: 'q8linear', shape, ms, gflops: (2 * M * N * K) / ms / 1e6, gbps: (M * K * 4 + M * N * 4 + N * K * weightBytes(weights)) / ms / 1e6,
  });
  const make = async (variant) => {
    const [rows, linear] = await Promise.all([compiledPipeline(device, quantiser, {}), compiledPipeline(device, variant, problem)]);
    const kernel = preparedKernel(device, [
      { pipeline: rows.pipeline, params: Q8_ROWS_PARAMS, values: { M, K, xOff: 0, xStride: K }, bindings: [x, codes, rowScales], groups: q8RowsGrid(M, K) },
      { pipeline: linear.pipeline, params: LINEAR_PARAMS, values, bindings: [codes, w, b, y, rowScales, ...blocks], groups: variant.grid(values) },
    ]);
    return { kernel, compileMs: rows.compileMs + linear.compileMs, output: () => readBack(device, y, M * N) };
  };
  const variants = fittingVariants('q8linear', device, { rows: M }).filter((v) => !only || only.includes(v.name));
  const result = await profileVariants(device, variants, make, row, budget, print);
  [x, w, b, y, codes, rowScales, ...blocks].forEach((buf) => buf.destroy());
  return result;
}

// Self-attention operands of (L, E, h) as the forward lays them out: one [L, 3E] Q|K|V buffer.
function attentionOperands(device, { L, E, h }, queryRows, causal) {
  const dk = E / h;
  const qkv = randomBuffer(device, L * 3 * E, 4);
  const none = zeroBuffer(device, 1);
  const values = {
    B: 1, L: queryRows, S: L, H: h, causal: causal ? 1 : 0, qOff: 0, qStride: 3 * E, kOff: E, kStride: 3 * E,
    vOff: 2 * E, vStride: 3 * E, oStride: E, group: 1, kvRows: L, scale: 1 / Math.sqrt(dk),
  };
  return { dk, qkv, none, values, destroy: () => [qkv, none].forEach((buf) => buf.destroy()) };
}

/** The flash variants on self-attention of (L, E, h), not causal or causal. */
export async function profileAttention(device, shape, causal, budget, print) {
  const { L, E, h } = shape;
  const ops = attentionOperands(device, shape, L, causal);
  const out = zeroBuffer(device, L * E);
  const stats = zeroBuffer(device, h * L * 2);
  const pairs = causal ? (L * (L + 1)) / 2 : L * L;
  const row = (ms) => ({
    kind: 'attention', shape: `L${L} E${E} h${h}${causal ? ' causal' : ''}`, ms,
    gflops: (4 * pairs * E) / ms / 1e6, gbps: (4 * L * E * 4) / ms / 1e6,
  });
  const heads = { dk: ops.dk, dv: ops.dk };
  const make = async (variant) => {
    const { pipeline, compileMs } = await compiledPipeline(device, variant, heads);
    // The last: the row table (kernels/row_table.wgsl.js), unread with perRow 0.
    const bindings = [ops.none, ops.none, ops.qkv, ops.qkv, ops.qkv, out, stats, ops.none];
    const kernel = preparedKernel(device, [{ pipeline, params: ATTENTION_PARAMS, values: ops.values, bindings, groups: variant.grid({ L, BH: h }) }]);
    return { kernel, compileMs, output: () => readBack(device, out, L * E) };
  };
  // precision 'float16': the float16-arithmetic flash variants too, where the device has 'shader-f16'.
  const result = await profileVariants(device, fittingVariants('attention', device, { ...heads, precision: 'float16' }), make, row, budget, print);
  ops.destroy();
  [out, stats].forEach((buf) => buf.destroy());
  return result;
}

/** The decode variants: one query row against S = L keys (both kernels of the split-K path). */
export async function profileDecode(device, shape, budget, print) {
  const { L, E, h } = shape;
  const ops = attentionOperands(device, shape, 1, false);
  const heads = zeroBuffer(device, E);
  const stats = zeroBuffer(device, h * 2);
  const row = (ms) => ({ kind: 'decode', shape: `L1 S${L} E${E} h${h}`, ms, gflops: (4 * L * E) / ms / 1e6, gbps: (2 * L * E * 4) / ms / 1e6 });
  const dims = { dk: ops.dk, dv: ops.dk };
  let partials = null;
  const make = async (variant) => {
    const chunks = cdiv(L, variant.chunk);
    partials?.destroy();
    partials = zeroBuffer(device, h * chunks * (ops.dk + 2));
    const t0 = performance.now();
    const [partial, reduce] = await Promise.all([
      compiledPipeline(device, variant, dims),
      compiledPipeline(device, variant.reduce, dims),
    ]);
    const kernel = preparedKernel(device, [
      { pipeline: partial.pipeline, params: ATTENTION_PARAMS, values: ops.values, bindings: [ops.none, ops.none, ops.qkv, ops.qkv, ops.qkv, partials, ops.none], groups: [chunks, 1, h] },
      { pipeline: reduce.pipeline, params: ATTENTION_PARAMS, values: ops.values, bindings: [partials, heads, stats], groups: [1, h, 1] },
    ]);
    return { kernel, compileMs: performance.now() - t0, output: () => readBack(device, heads, E) };
  };
  const result = await profileVariants(device, fittingVariants('decode', device, dims), make, row, budget, print);
  ops.destroy();
  [heads, stats, partials].forEach((buf) => buf?.destroy());
  return result;
}
