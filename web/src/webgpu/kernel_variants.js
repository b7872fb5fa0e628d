// The kernel variants as descriptors, built from kernel_config.js's catalogue: for each family
// (linear, attention, decode) and variant name, whether it fits a device, its pipeline key, its
// WGSL and its grid. Variants of one family share their uniforms and bindings (linear_common's
// LINEAR_PARAMS, attention_common's ATTENTION_PARAMS), so the pass that dispatches them does not
// know which one runs. The pipeline key holds what the WGSL depends on (head widths, the
// vec4-load flavour), so one pipeline serves a whole shape class.
import { ATTENTION_VARIANTS, DECODE_VARIANTS, LINEAR_VARIANTS } from './kernel_config.js';
import { decodePartialShader } from './kernels/decode_partial.wgsl.js';
import { decodeReduceShader } from './kernels/decode_reduce.wgsl.js';
import { FLASH_BR, flashAttentionShader, flashKeyTile } from './kernels/flash_attention.wgsl.js';
import { flashQuadFloats, flashQuadShader } from './kernels/flash_quad.wgsl.js';
import { flashTiledFloats, flashTiledShader } from './kernels/flash_tiled.wgsl.js';
import { vec4Aligned } from './kernels/linear_common.wgsl.js';
import { packedKey } from './kernels/packed_values.wgsl.js';
import { LINEAR_TILE, linearShader } from './kernels/linear.wgsl.js';
import { linearTiledBytes, linearTiledShader, linearTiledTile } from './kernels/linear_tiled.wgsl.js';

const cdiv = (a, b) => Math.ceil(a / b);
const workgroupBytes = (limits) => limits.maxComputeWorkgroupStorageSize ?? 16384;

// problem: { M, N, K, xOff, xStride, wOff } (LINEAR_PARAMS' names) and `weights`, the module's
// weightsDtype, which the WGSL compiles in (float32's keys stay as they were).
const weightsKey = ({ weights }) => packedKey(weights);

function linearVariant(name, spec) {
  if (spec.kernel === 'tile64') {
    return {
      name, fits: () => true, key: (problem) => `linear:${name}${weightsKey(problem)}`, shader: ({ weights }) => linearShader(weights),
      grid: ({ M, N }) => [cdiv(N, LINEAR_TILE), cdiv(M, LINEAR_TILE), 1],
    };
  }
  const { rows, cols } = linearTiledTile(spec);
  return {
    name,
    fits: (limits) => linearTiledBytes(spec) <= workgroupBytes(limits),
    key: (problem) => `linear:${name}:${vec4Aligned(problem) ? 'vec4' : 'f32'}${weightsKey(problem)}`,
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
  tiled: ({ bc, qShared = true, dot = false, lean = false }) => ({
    fits: (limits, { dk, dv }) => dv <= 256 && flashTiledFloats(dk, dv, bc, qShared, dot, lean) * 4 <= workgroupBytes(limits)
      && (qShared || Math.max(dk, dv) >= 128 || flashTiledFloats(dk, dv, bc) * 4 > workgroupBytes(limits)),
    shader: ({ dk, dv, kv }) => flashTiledShader({ dk, dv, bc, qShared, dot, lean, kv }),
  }),
  quad: () => ({
    fits: (limits, { dk, dv }) => dv <= 256 && flashQuadFloats(dk, dv) * 4 <= workgroupBytes(limits),
    shader: ({ dk, dv, kv }) => flashQuadShader({ dk, dv, kv }),
  }),
};

function attentionVariant(name, spec) {
  return {
    name, ...attentionKernels[spec.kernel](spec),
    key: (problem) => `flash:${name}:${problem.dk}:${problem.dv}${kvKey(problem)}`,
    grid: ({ L, BH }) => [cdiv(L, FLASH_BR), BH, 1],
  };
}

// Two kernels: partial (problem { dk, dv, kv? }, as the flash variants') then reduce ({ dv }).
function decodeVariant(name, { chunk }) {
  return {
    name, chunk, fits: () => true,
    key: (problem) => `decodePartial:${name}:${problem.dk}:${problem.dv}${kvKey(problem)}`,
    shader: ({ dk, dv, kv }) => decodePartialShader({ dk, dv, chunk, kv }),
    reduceKey: ({ dv }) => `decodeReduce:${name}:${dv}`, reduceShader: ({ dv }) => decodeReduceShader({ dv, chunk }),
  };
}

const build = (catalogue, make) => Object.fromEntries(Object.entries(catalogue).map(([name, spec]) => [name, make(name, spec)]));

/** family → name → descriptor. */
export const VARIANTS = {
  linear: build(LINEAR_VARIANTS, linearVariant),
  attention: build(ATTENTION_VARIANTS, attentionVariant),
  decode: build(DECODE_VARIANTS, decodeVariant),
};

/** The variants of `family` that fit `limits` for `problem`, in the catalogue's order. */
export const fittingVariants = (family, limits, problem) => Object.values(VARIANTS[family]).filter((v) => v.fits(limits, problem));
