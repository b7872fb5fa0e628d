// What every linear kernel (Y = X · Wᵀ + b, torch.nn.Linear's layout: W is [N, K], row-major)
// shares: its uniforms and its bindings. X, W, b and Y are addressed through element offsets and
// row strides, so one pipeline serves every projection: several weight matrices live in one
// buffer (W_q, W_k, W_v stacked as in PyTorch's in_proj_weight) and Q, K and V may be columns
// of one output buffer.
import { paramsWgsl } from '../kernel_params.js';

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
];

/** The uniform block and bindings; X and W as `element` (f32, or vec4f for 4-wide loads). */
export function linearBindings(element = 'f32') {
  return `${paramsWgsl(LINEAR_PARAMS)}
@group(0) @binding(1) var<storage, read> x: array<${element}>;
@group(0) @binding(2) var<storage, read> w: array<${element}>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
`;
}

/**
 * Whether a linear problem can read X and W as vec4f: K, X's row stride and both offsets are
 * multiples of 4 (then every 4 consecutive k of a row are one aligned vec4).
 */
export const vec4Aligned = ({ K, xOff = 0, xStride, wOff = 0 }) => (K | xOff | xStride | wOff) % 4 === 0;
