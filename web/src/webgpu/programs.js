// The program registry: every WGSL program of the WebGPU backend as a descriptor of one shape,
// { name, fits(limits, problem), key(problem), shader(problem) } (+ grid(problem) where the pass
// dispatches by it, + tolerance for a variant), whose pipeline pipelines.js's programPipeline() makes and caches by key.
// VARIANTS: the kernel variants, built from selection/kernel_config.js's catalogue, for each
// family (linear, attention, decode, q8linear, q8rows) and variant name; the selection (selection/) picks one per
// call. Variants of one family share their uniforms and bindings (linear_common's LINEAR_PARAMS,
// attention_common's ATTENTION_PARAMS), so the pass that dispatches them does not know which one
// runs. KERNELS: the kernels without variants, one descriptor each. A key holds what the WGSL
// depends on (head widths, the vec4-load flavour, a narrow dtype), so one pipeline serves a whole
// shape class; sizes, strides, masks and causal are uniforms.
import { ATTENTION_VARIANTS, DECODE_VARIANTS, DEFAULT_TOLERANCE, LINEAR_VARIANTS, Q8_LINEAR_VARIANTS, Q8_ROWS_VARIANTS } from './selection/kernel_config.js';
import { attentionSinksShader } from './kernels/attention_sinks.wgsl.js';
import { attentionWeightsShader } from './kernels/attention_weights.wgsl.js';
import { cacheAppendShader } from './kernels/cache_append.wgsl.js';
import { nonFiniteRowsShader } from './kernels/nonfinite_rows.wgsl.js';
import { decodePartialShader } from './kernels/decode_partial.wgsl.js';
import { decodeReduceShader } from './kernels/decode_reduce.wgsl.js';
import { decodeReduceNanShader } from './kernels/decode_reduce_nan.wgsl.js';
import { FLASH_BR, flashAttentionShader, flashKeyTile } from './kernels/flash_attention.wgsl.js';
import { flashQuadFloats, flashQuadShader } from './kernels/flash_quad.wgsl.js';
import { flashOctFloats, flashOctShader } from './kernels/flash_oct.wgsl.js';
import { flashTiledBytes, flashTiledShader } from './kernels/flash_tiled.wgsl.js';
import { vec4Aligned } from './kernels/linear_common.wgsl.js';
import { splitFits } from './selection/attention_path.js';
import { packedKey } from './kernels/packed_values.wgsl.js';
import { LINEAR_TILE, linearShader } from './kernels/linear.wgsl.js';
import { linearRowsShader, rowsFlavour } from './kernels/linear_rows.wgsl.js';
import { splitGrid } from './kernels/column_split.wgsl.js';
import { linearTiledBytes, linearTiledShader, linearTiledTile } from './kernels/linear_tiled.wgsl.js';
import { Q8_LINEAR_TILE, q8LinearShader } from './kernels/q8_linear.wgsl.js';
import { q8TiledShader, q8TiledTile } from './kernels/q8_tiled.wgsl.js';
import { q8SplitShader } from './kernels/q8_split.wgsl.js';
import { q8RowsShader } from './kernels/q8_rows.wgsl.js';
import { qkNormShader } from './kernels/qk_norm.wgsl.js';
import { rotaryShader } from './kernels/rotary.wgsl.js';
import { narrowHalfShader, widenHalfShader } from './kernels/widen_half.wgsl.js';

const cdiv = (a, b) => Math.ceil(a / b);
const workgroupBytes = (limits) => limits.maxComputeWorkgroupStorageSize ?? 16384;

// problem: { M, N, K, xOff, xStride, wOff } (LINEAR_PARAMS' names) and `weights`, the module's
// weightsDtype, which the WGSL compiles in (float32's keys stay as they were).
const weightsKey = ({ weights }) => packedKey(weights);
// A float16 variant's f32 twins (spec.halfType 'f32' or 'f16-rounded', tests only) are programs of their own.
const twinKey = ({ halfType }) => (halfType && halfType !== 'f16' ? `:${halfType}` : '');

function linearVariant(name, spec) {
  if (spec.kernel === 'rows') {
    // fits() takes { rows } (the call's largest projection; absent: any), as q8LinearVariant's.
    return {
      name, fits: (limits, { rows } = {}) => rows === undefined || rows <= spec.maxRows,
      key: (problem) => `linear:${name}:${rowsFlavour(problem).key}${weightsKey(problem)}`,
      shader: (problem) => linearRowsShader({ ...rowsFlavour(problem), weights: problem.weights, subgroups: spec.subgroups }),
      grid: splitGrid,
    };
  }
  if (spec.kernel === 'tile64') {
    return {
      name, fits: () => true, key: (problem) => `linear:${name}${weightsKey(problem)}`, shader: ({ weights }) => linearShader(weights),
      grid: ({ M, N }) => [cdiv(N, LINEAR_TILE), cdiv(M, LINEAR_TILE), 1],
    };
  }
  const { rows, cols } = linearTiledTile(spec);
  const twin = twinKey(spec);
  return {
    name,
    fits: (limits) => linearTiledBytes(spec) <= workgroupBytes(limits),
    key: (problem) => `linear:${name}:${vec4Aligned(problem) ? 'vec4' : 'f32'}${weightsKey(problem)}${twin}`,
    shader: (problem) => linearTiledShader({ ...spec, vec4: vec4Aligned(problem), weights: problem.weights }),
    grid: ({ M, N }) => [cdiv(N, cols), cdiv(M, rows), 1],
  };
}

// problem: { dk, dv, kv?, L, BH } (head widths, K/V storage dtype when a narrow cache's, query
// rows, batch × heads). Every variant takes 64 query rows per workgroup, so the grid is the same.
// kv (absent: float32) is compiled in: K and V are read where stored (kv_reads.wgsl.js).
const kvKey = ({ kv }) => packedKey(kv);

const attentionKernels = {
  row: () => ({
    fits: (limits, { dk, dv }) => flashKeyTile(dk, dv) >= 1,
    shader: ({ dk, dv, kv }) => flashAttentionShader({ dk, dv, kv }),
  }),
  // Each invocation keeps ⌈DV/16⌉ vec4 accumulators: past 16 of them registers spill.
  // Q from global memory (qShared false) is for heads too wide for Q in workgroup memory: a
  // candidate only where the 16-key tile with Q staged does not fit, or for heads of 128 and more
  // (on the H100 it ran at half the speed of tile64x16 at d = 64).
  tiled: (spec) => ({
    fits: (limits, { dk, dv }) => dv <= 256 && flashTiledBytes(dk, dv, spec) <= workgroupBytes(limits)
      && (spec.qShared !== false || Math.max(dk, dv) >= 128 || flashTiledBytes(dk, dv, { bc: spec.bc }) > workgroupBytes(limits)),
    shader: ({ dk, dv, kv }) => flashTiledShader({ ...spec, dk, dv, kv }),
  }),
  quad: () => ({
    fits: (limits, { dk, dv }) => dv <= 256 && flashQuadFloats(dk, dv) * 4 <= workgroupBytes(limits),
    shader: ({ dk, dv, kv }) => flashQuadShader({ dk, dv, kv }),
  }),
  // 8 rows × ⌈DV/32⌉ vec4 accumulators an invocation: past DV 128 (32 vec4s) registers spill.
  oct: () => ({
    fits: (limits, { dk, dv }) => dv <= 128 && flashOctFloats(dk, dv) * 4 <= workgroupBytes(limits),
    shader: ({ dk, dv, kv }) => flashOctShader({ dk, dv, kv }),
  }),
};

function attentionVariant(name, spec) {
  return {
    name, ...attentionKernels[spec.kernel](spec),
    key: (problem) => `flash:${name}:${problem.dk}:${problem.dv}${kvKey(problem)}${twinKey(spec)}`,
    grid: ({ L, BH }) => [cdiv(L, FLASH_BR), BH, 1],
  };
}

// Two programs: partial (problem { dk, dv, kv? }, as the flash variants') then `reduce`, a
// descriptor of its own ({ dv }), one program per chunk (the subgroup variant's is split256's), or
// for a cached call without weights or sinks `reduceNan`, the reduce with the call's NaN rule
// ({ dk, dv, dtype, rows }: nonFiniteRows' problem; attention_path.js's nanRuleInReduce()).
// fits() takes a call's splitShape() (absent: any call): its scratch and grid for this chunk.
function decodeVariant(name, { chunk, subgroups = false }) {
  const reduceName = `split${chunk}`;
  return {
    name, chunk, fits: (limits, problem = {}) => problem.keys === undefined || splitFits(limits, chunk, problem),
    key: (problem) => `decodePartial:${name}:${problem.dk}:${problem.dv}${kvKey(problem)}`,
    shader: ({ dk, dv, kv }) => decodePartialShader({ dk, dv, chunk, kv, subgroups }),
    reduce: {
      name: reduceName, fits: () => true, key: ({ dv }) => `decodeReduce:${reduceName}:${dv}`, shader: ({ dv }) => decodeReduceShader({ dv, chunk }),
    },
    reduceNan: {
      name: `${reduceName}nan`, fits: () => true,
      key: ({ dk, dv, dtype, rows }) => `decodeReduceNan:${reduceName}:${dk}:${dv}:${dtype}${rows ? ':rows' : ''}`,
      shader: (problem) => decodeReduceNanShader({ ...problem, chunk }),
    },
  };
}

// problem: { dtype: the weightsDtype, dot: 'dot4' | 'loop' } (q8_projection.js's q8LinearProblem)
// for the pipeline; fits() takes { rows } (the call's largest projection; absent: any), and
// grid() LINEAR_PARAMS' M and N. The default keeps its key of before ('q8Linear:int8:dot4').
function q8LinearVariant(name, { kernel, minRows = 0, maxRows = Infinity, ...spec }) {
  const fits = (limits, { rows } = {}) => rows === undefined || (rows >= minRows && rows <= maxRows);
  if (kernel === 'split') {
    return {
      name, fits, key: ({ dtype, dot }) => `q8Linear:${name}:${dtype}:${dot}`, shader: ({ dtype, dot }) => q8SplitShader({ weights: dtype, dot }),
      grid: splitGrid,
    };
  }
  if (kernel === 'tile16') {
    return {
      name, fits, key: ({ dtype, dot }) => `q8Linear:${dtype}:${dot}`, shader: ({ dtype, dot }) => q8LinearShader({ weights: dtype, dot }),
      grid: ({ M, N }) => [cdiv(N, Q8_LINEAR_TILE), cdiv(M, Q8_LINEAR_TILE), 1],
    };
  }
  const { rows, cols } = q8TiledTile(spec);
  return {
    name, fits, key: ({ dtype, dot }) => `q8Linear:${name}:${dtype}:${dot}`, shader: ({ dtype, dot }) => q8TiledShader({ ...spec, weights: dtype, dot }),
    grid: ({ M, N }) => [cdiv(N, cols), cdiv(M, rows), 1],
  };
}

// The row quantiser (problem {}): the default keeps its key of before ('q8Rows:').
const q8RowsVariant = (name, { subgroups = false }) => ({
  name, fits: () => true, key: () => `q8Rows:${subgroups ? name : ''}`, shader: () => q8RowsShader({ subgroups }),
});

// Each descriptor carries its tolerance against the reference (kernel_config.js's DEFAULT_TOLERANCE),
// the device features it needs (`features`, none by default) and the gpuPrecision of the modules
// it may run for (`precision`: 'float32' for any module, 'float16' for those that opted in).
const descriptor = (name, spec, make) => ({
  tolerance: spec.tolerance ?? DEFAULT_TOLERANCE, features: spec.features ?? [], precision: spec.precision ?? 'float32', ...make(name, spec),
});
const build = (catalogue, make) => Object.fromEntries(Object.entries(catalogue).map(([name, spec]) => [name, descriptor(name, spec, make)]));

const CATALOGUES = {
  linear: [LINEAR_VARIANTS, linearVariant],
  attention: [ATTENTION_VARIANTS, attentionVariant],
  decode: [DECODE_VARIANTS, decodeVariant],
  q8linear: [Q8_LINEAR_VARIANTS, q8LinearVariant],
  q8rows: [Q8_ROWS_VARIANTS, q8RowsVariant],
};

/**
 * Tests: the float16 variant `name` of `family` (linear, attention) compiled with f32 in place of
 * f16 (halfType 'f32'; 'f16-rounded': every value rounded to f16 as float16 arithmetic would), as
 * a descriptor that needs no feature, so that a device without 'shader-f16' runs its program.
 */
export function halfTwin(family, name, halfType = 'f32') {
  const [catalogue, make] = CATALOGUES[family];
  return { ...descriptor(name, { ...catalogue[name], halfType }, make), features: [] };
}

/** family → name → descriptor. */
export const VARIANTS = Object.fromEntries(Object.entries(CATALOGUES).map(([family, [catalogue, make]]) => [family, build(catalogue, make)]));

/**
 * The variants of `family` that `device` ({ limits, features }: a GPUDevice) can run for `problem`,
 * in the catalogue's order: within its limits, with every feature the variant needs, and of the
 * module's precision (problem.precision, create()'s gpuPrecision: 'float16' adds its variants to
 * the float32 ones).
 */
export const fittingVariants = (family, device, problem) => Object.values(VARIANTS[family])
  .filter((v) => v.features.every((f) => device.features?.has(f)) && v.fits(device.limits, problem)
    && (v.precision === 'float32' || v.precision === problem.precision));

// A kernel without variants: its key is its name and, where given, the problem's dk, dv, dtype
// and heads ('weights:64', 'cacheAppend:64:64:int8:8', 'rotary:'); it fits every device the module does.
function kernel(name, shader) {
  const key = ({ dk, dv, dtype, heads, rows, qHeads, prepare } = {}) => `${name}:${[dk, dv, dtype, heads, rows ? 'rows' : undefined, qHeads ? `q${qHeads}` : undefined, prepare || undefined]
    .filter((x) => x !== undefined).join(':')}`;
  return { name, fits: () => true, key, shader: (problem = {}) => shader(problem) };
}

/**
 * name → descriptor of the kernels without variants: 'rotary', 'sinks', 'qkNorm' (problem {}),
 * 'weights' ({ dk, dtype? }: a narrow cache's dtype K is read in), 'cacheAppend' ({ dk, dv,
 * dtype, heads, qHeads?, prepare? }: a cached call's new K/V rows and their flags; with prepare,
 * Q's qHeads and K's heads normed and rotated first: input_steps.js's prepareInAppend()), 'nonFiniteRows' ({ dk, dv, dtype,
 * heads: numHeads }: a cached call's NaN rule, with rows: true for a call whose kernels read the row table: rows at lengths of their own, or positionIds that move a window), 'widenHalf' ({}: a float16 GPU input widened), 'narrowHalf' ({}: a float16 call's 'gpu-buffer' results rounded). (Activations 'int8''s row quantiser and product
 * are the q8rows and q8linear families', VARIANTS.)
 */
export const KERNELS = Object.fromEntries(Object.entries({
  rotary: () => rotaryShader(),
  cacheAppend: (problem) => cacheAppendShader(problem),
  weights: ({ dk, dtype }) => attentionWeightsShader({ dk, kv: dtype }),
  sinks: () => attentionSinksShader(),
  qkNorm: () => qkNormShader(),
  nonFiniteRows: (problem) => nonFiniteRowsShader(problem),
  widenHalf: () => widenHalfShader(),
  narrowHalf: () => narrowHalfShader(),
}).map(([name, shader]) => [name, kernel(name, shader)]));
