// WGSL kernel: Y = X · Wᵀ + b with activations 'int8' (docs/attention-math.md §11; the WASM core's
// <type>q8_linear kernels), for int8 and int4 weights: X's rows quantised already by
// q8_rows.wgsl.js (codes four per u32, a d per block), W's codes as weight_storage.js stores them.
// Per output, per block of Q8_BLOCK in order, the block's Σ (q_w − z)·q_x is an exact i32 (at
// most 32 · 255 · 127 in magnitude, so its f32 is exact too), and
//   acc = acc + (s_w · d_x) · f32(dot),   y = acc + bias
// each product and sum an f32 operation of its own, in the core's order, so the results are the
// WASM core's. Four products at a time: dot4I8Packed (WGSL's packed_4x8_integer_dot_product) where
// the device's WGSL has it (`dot` 'dot4'), else the same integers unpacked and summed in i32
// ('loop'). int4 codes (0-15) are spread into bytes, which are then valid i8 lanes; the zero point
// comes off once per block as z · Σ q_x (the same integer). A row of W starts anywhere in its
// words (its offset and K are free), so four codes are funnel-shifted out of two words; lanes past
// K meet zero activation codes. A block whose d is NaN (a non-finite input) makes the output NaN,
// tested on its bits since WGSL lets a GPU assume no float is NaN.
//
// One output per invocation, 16 × 16 per workgroup; grid (⌈N/16⌉, ⌈M/16⌉). Uniforms: LINEAR_PARAMS
// (linear_common.wgsl.js; xOff and xStride unused: the codes are packed rows).
import { paramsWgsl } from '../kernel_params.js';
import { LINEAR_PARAMS } from './linear_common.wgsl.js';
import { q8BlockWgsl } from './packed_values.wgsl.js';

/** Output tile edge: a workgroup computes Y's 16 × 16 outputs. */
export const Q8_LINEAR_TILE = 16;

// Four i8 lanes of a times b's, summed exactly in i32.
const DOTS = {
  dot4: 'fn dot4(a: u32, b: u32) -> i32 { return dot4I8Packed(a, b); }\n',
  loop: `fn dot4(a: u32, b: u32) -> i32 {
  var sum = 0;
  for (var lane = 0u; lane < 4u; lane++) {
    sum += extractBits(bitcast<i32>(a), 8u * lane, 8u) * extractBits(bitcast<i32>(b), 8u * lane, 8u);
  }
  return sum;
}
`,
};

// The four weight codes from element index e as i8 lanes, and the block's correction.
const CODES = {
  // Four bytes from byte e of w.
  int8: `fn codes4(e: u32) -> u32 {
  let j = e / 4u;
  let s = (e % 4u) * 8u;
  return select((w[j] >> s) | (w[j + 1u] << (32u - s)), w[j], s == 0u);
}
`,
  // Four nibbles from nibble e of w, each moved to the low half of a byte.
  int4: `fn codes4(e: u32) -> u32 {
  let j = e / 8u;
  let s = (e % 8u) * 4u;
  let n = select((w[j] >> s) | (w[j + 1u] << (32u - s)), w[j], s == 0u);
  return (n & 0xfu) | ((n & 0xf0u) << 4u) | ((n & 0xf00u) << 8u) | ((n & 0xf000u) << 12u);
}
fn zeroPoint(b: u32) -> i32 { return i32(extractBits(zeros[b / 8u], 4u * (b % 8u), 4u)); }
`,
};

/** weights: 'int8' | 'int4'; dot: 'dot4' | 'loop'. */
export function q8LinearShader({ weights, dot }) {
  const int4 = weights === 'int4';
  return /* wgsl */ `
${paramsWgsl(LINEAR_PARAMS)}@group(0) @binding(1) var<storage, read> xq: array<u32>;  // q8_rows.wgsl.js's codes
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;       // f32 bits (a NaN written as such)
@group(0) @binding(5) var<storage, read> xd: array<u32>;       // q8_rows.wgsl.js's d per block, as bits
@group(0) @binding(6) var<storage, read> scales: array<f32>;   // W's, from sOff
${int4 ? '@group(0) @binding(7) var<storage, read> zeros: array<u32>;\n' : ''}${q8BlockWgsl}
const WORDS = Q8_BLOCK / 4u;  // activation words per block
const NAN_BITS = 0x7fc00000u;
${DOTS[dot]}${CODES[weights]}
@compute @workgroup_size(${Q8_LINEAR_TILE}, ${Q8_LINEAR_TILE})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let n = gid.x;
  let m = gid.y;
  if (m >= p.M || n >= p.N) { return; }
  let blocks = (p.K + Q8_BLOCK - 1u) / Q8_BLOCK;
  var acc = 0.0;
  var nonFinite = false;
  for (var b = 0u; b < blocks; b++) {
    let at = (m * blocks + b) * WORDS;
    let e = p.wOff + n * p.K + b * Q8_BLOCK;
    var sum = 0;${int4 ? '\n    var xsum = 0;' : ''}
    for (var t = 0u; t < WORDS; t++) {
      let xw = xq[at + t];
      sum += dot4(codes4(e + 4u * t), xw);${int4 ? '\n      xsum += dot4(0x01010101u, xw);' : ''}
    }
    let sb = p.sOff + n * blocks + b;${int4 ? '\n    sum -= zeroPoint(sb) * xsum;' : ''}
    let dx = xd[m * blocks + b];
    nonFinite = nonFinite || (dx & 0x7f800000u) == 0x7f800000u;
    let scale = scales[sb] * bitcast<f32>(dx);
    let term = scale * f32(sum);
    acc = acc + term;
  }
  y[p.yOff + m * p.yStride + n] = select(bitcast<u32>(acc + bias[p.bOff + n]), NAN_BITS, nonFinite);
}
`;
}
