// What every linear kernel (Y = X · Wᵀ + b, torch.nn.Linear's layout: W is [N, K], row-major)
// shares: its uniforms and its bindings. X, W, b and Y are addressed through element offsets and
// row strides, so one pipeline serves every projection: several weight matrices live in one
// buffer (W_q, W_k, W_v stacked as in PyTorch's in_proj_weight) and Q, K and V may be columns
// of one output buffer. W is stored as the module's weightsDtype says (web/src/webgpu/
// weight_storage.js): float32, or 16-bit values two per u32 (read with unpack2x16float, or a
// shift for bfloat16: no shader-f16 needed), or int8 four per u32 with one float32 scale per
// q8_0 block along k (Q8_BLOCK, q8_0.js), or int4 codes eight per u32 with a float32 scale and a
// 4-bit zero point per block of the same length (q4_0.js); the kernels read it through
// weight(n, k) and compute in float32 (the packed read: packed_values.wgsl.js).
import { packParams, paramsWgsl } from '../kernel_params.js';
import { VALUES_PER_WORD, isPacked, packedRead, q8BlockWgsl, wordValue } from './packed_values.wgsl.js';
import { INTEGER_WEIGHTS_DTYPES, Q8_BLOCK } from '../../storage/storage_types.js';

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
  ['sOff', 'u32', 'int8 W: W[n, k] = q · scales[b], b = sOff + n·⌈K/Q8_BLOCK⌉ + k/Q8_BLOCK (q8_0.js); int4: (q − zeros[b]) · scales[b]'],
];

/** A linear problem's uniform block: its LINEAR_PARAMS values (not its `weights` dtype, a pipeline key). */
export function linearUniforms({ weights, ...values }) {
  return packParams(LINEAR_PARAMS, values);
}

// The int8 and int4 rule, in one place for every reader of W (weight() below, linear_rows.wgsl.js's
// whole words): W[n, k] = q · s (int8) or (q − z) · s (int4), s and z its block's scale and zero
// point, one float32 product as the WASM core forms it ((q − z) is an integer, exact in f32).
const isBlocked = (weights) => INTEGER_WEIGHTS_DTYPES.includes(weights);

/**
 * WGSL statements that bind `s` (and for int4 `z`) for the block of W[n, k] (`k` a WGSL
 * expression; n and the uniforms p in scope), for dequantised(); none where W has no blocks.
 */
export const blockTerms = (weights, k) => (!isBlocked(weights) ? [] : [
  `let b = p.sOff + n * ((p.K + Q8_BLOCK - 1u) / Q8_BLOCK) + ${k} / Q8_BLOCK;`,
  'let s = scales[b];',
  ...(weights === 'int4' ? ['let z = zeroPoint(b);'] : []),
]);

/** WGSL: the float32 weight of stored value `q` (a code as f32, or a 16-bit float), with blockTerms()' s and z. */
export const dequantised = (weights, q) => (weights === 'int4' ? `(${q} - z) * s` : isBlocked(weights) ? `${q} * s` : q);

// W[n, k] as f32: element i = wOff + n·K + k of the packed words.
function weightRead(weights) {
  return `${packedRead(weights, 'packedW', 'w')}${weights === 'int4' ? packedRead(weights, 'zeroPoint', 'zeros') : ''}${isBlocked(weights) ? q8BlockWgsl : ''}
fn weight(n: u32, k: u32) -> f32 {
  let i = p.wOff + n * p.K + k;
  ${[...blockTerms(weights, 'k'), `return ${dequantised(weights, 'packedW(i)')};`].join('\n  ')}
}
`;
}

// Four consecutive weights W[n, k … k + 3] as a vec4f where vec4Aligned() (W's offset, K and k
// multiples of 4): their words read once (one for int8, two for 16-bit values, half of one for
// int4, whose first lane is then 0 or 4) with one block's scale and zero point (a q8_0 block is a
// multiple of 4 values), where four weight() calls load each again; each value the same float32.
function weight4Read(weights) {
  if (Q8_BLOCK % 4 !== 0) throw new Error('weight4: a block must hold whole vec4s');
  const per = VALUES_PER_WORD[weights];
  const lines = ['let i = p.wOff + n * p.K + k;', ...blockTerms(weights, 'k')];
  for (let t = 0; t < Math.max(1, 4 / per); t++) lines.push(`let w${t} = w[i / ${per}u${t ? ` + ${t}u` : ''}];`);
  const lane = (q) => (per > 4 ? `i % ${per}u + ${q}u` : `${q % per}u`);
  const value = (q) => dequantised(weights, wordValue(weights, `w${Math.floor(q / per)}`, lane(q)));
  return `fn weight4(n: u32, k: u32) -> vec4f {\n  ${[...lines, `return vec4f(${[0, 1, 2, 3].map(value).join(', ')});`].join('\n  ')}\n}\n`;
}

/**
 * The uniform block and bindings; X as `element` (f32, or vec4f for 4-wide loads), W likewise for
 * float32 `weights`, else packed words read by weight(n, k), and with vec4f by weight4(n, k) too
 * (int8 and int4: with their scales at binding 5; int4: with its zero points at binding 6, four
 * bits each, eight per u32).
 */
export function linearBindings(element = 'f32', weights = 'float32') {
  const narrow = isPacked(weights);
  const scales = isBlocked(weights) ? '@group(0) @binding(5) var<storage, read> scales: array<f32>;\n' : '';
  const zeros = weights === 'int4' ? '@group(0) @binding(6) var<storage, read> zeros: array<u32>;\n' : '';
  return `${paramsWgsl(LINEAR_PARAMS)}
@group(0) @binding(1) var<storage, read> x: array<${element}>;
@group(0) @binding(2) var<storage, read> w: array<${narrow ? 'u32' : element}>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
${scales}${zeros}${narrow ? weightRead(weights) : ''}${narrow && element === 'vec4f' ? weight4Read(weights) : ''}`;
}

/**
 * Whether a linear problem can read X and W as vec4f: K, X's row stride and both offsets are
 * multiples of 4 (then every 4 consecutive k of a row are one aligned vec4).
 */
export const vec4Aligned = ({ K, xOff = 0, xStride, wOff = 0 }) => (K | xOff | xStride | wOff) % 4 === 0;
