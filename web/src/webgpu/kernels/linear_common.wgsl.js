// What every linear kernel (Y = X · Wᵀ + b, torch.nn.Linear's layout: W is [N, K], row-major)
// shares: its uniforms and its bindings. X, W, b and Y are addressed through element offsets and
// row strides, so one pipeline serves every projection: several weight matrices live in one
// buffer (W_q, W_k, W_v stacked as in PyTorch's in_proj_weight) and Q, K and V may be columns
// of one output buffer. W is stored as the module's weightsDtype says (web/src/webgpu/
// weight_storage.js): float32, or 16-bit values two per u32 (read with unpack2x16float, or a
// shift for bfloat16: no shader-f16 needed), or int8 four per u32 with one float32 scale per
// block of 32 along k; the kernels read it through weight(n, k) and compute in float32.
import { packParams, paramsWgsl } from '../kernel_params.js';

/** The linear kernels' uniforms, in order (kernel_params.js makes the struct and the packing). */
export const LINEAR_PARAMS = [
  ['M', 'u32', 'Y is M×N, the reduction is over K'],
  ['N', 'u32'],
  ['K', 'u32'],
  ['xOff', 'u32', 'X[m, k] = x[xOff + m·xStride + k]'],
  ['xStride', 'u32'],
  ['wOff', 'u32', 'W[n, k] = w[wOff + n·K + k]'],
  ['bOff', 'u32', 'b[n] = bias[bOff + n]'],
  ['yOff', 'u32', 'Y[m, n] = y[yOff + m·yStride + n]'],
  ['yStride', 'u32'],
  ['sOff', 'u32', 'int8 W: W[n, k] = q · scales[sOff + n·⌈K/32⌉ + k/32]'],
];

/** A linear problem's uniform block: its LINEAR_PARAMS values (not its `weights` dtype, a pipeline key). */
export function linearUniforms({ weights, ...values }) {
  return packParams(LINEAR_PARAMS, values);
}

/** Whether W of storage `weights` ('float32' when not given) is read through weight(n, k). */
export const narrowWeights = (weights) => weights !== undefined && weights !== 'float32';

// W[n, k] as f32, for each narrow storage: element i = wOff + n·K + k of the packed words.
const WEIGHT_READS = {
  float16: 'let i = p.wOff + n * p.K + k;\n  return unpack2x16float(w[i >> 1u])[i & 1u];',
  // A bfloat16 is the top half of a float32: move it there.
  bfloat16: 'let i = p.wOff + n * p.K + k;\n  let word = w[i >> 1u];\n  return bitcast<f32>(select(word << 16u, word & 0xffff0000u, (i & 1u) == 1u));',
  // extractBits of an i32 sign-extends the byte; q · scale is the stored value exactly as the
  // WASM core forms it (one f32 product).
  int8: 'let i = p.wOff + n * p.K + k;\n  let q = extractBits(bitcast<i32>(w[i >> 2u]), 8u * (i & 3u), 8u);\n'
    + '  return f32(q) * scales[p.sOff + n * ((p.K + 31u) / 32u) + k / 32u];',
};

/**
 * The uniform block and bindings; X as `element` (f32, or vec4f for 4-wide loads), W likewise for
 * float32 `weights`, else packed words read by weight(n, k) (int8: with its scales at binding 5).
 */
export function linearBindings(element = 'f32', weights = 'float32') {
  const narrow = narrowWeights(weights);
  return `${paramsWgsl(LINEAR_PARAMS)}
@group(0) @binding(1) var<storage, read> x: array<${element}>;
@group(0) @binding(2) var<storage, read> w: array<${narrow ? 'u32' : element}>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${weights === 'int8' ? '@group(0) @binding(5) var<storage, read> scales: array<f32>;\n' : ''}${narrow ? `
fn weight(n: u32, k: u32) -> f32 {
  ${WEIGHT_READS[weights]}
}
` : ''}`;
}

/**
 * Whether a linear problem can read X and W as vec4f: K, X's row stride and both offsets are
 * multiples of 4 (then every 4 consecutive k of a row are one aligned vec4).
 */
export const vec4Aligned = ({ K, xOff = 0, xStride, wOff = 0 }) => (K | xOff | xStride | wOff) % 4 === 0;
