// What the int8-activation linear kernels (q8_linear.wgsl.js: one output per invocation;
// q8_tiled.wgsl.js: a register-blocked tile) share, so that both give the same bits: their
// bindings, the four-lane integer dot product, the weight codes as i8 lanes, and the f32 steps
// per block and per output (docs/attention-math/storage.md §11, the WASM core's <type>q8_linear kernels).
// Per output, per block of Q8_BLOCK in order, the block's Σ (q_w − z)·q_x is an exact i32 (at
// most 32 · 255 · 127 in magnitude, so its f32 is exact too), and
//   acc = acc + (s_w · d_x) · f32(dot),   y = acc + bias
// each product and sum an f32 operation of its own, in the core's order, so the results are the
// WASM core's whatever order the integer sums take. Four products at a time: dot4I8Packed (WGSL's
// packed_4x8_integer_dot_product) where the device's WGSL has it (`dot` 'dot4'), else the same
// integers unpacked and summed in i32 ('loop'). int4 codes (0-15) are spread into bytes, which
// are then valid i8 lanes; the zero point comes off once per block as z · Σ q_x (the same
// integer). A row of W starts anywhere in its words (its offset and K are free), so four codes are
// funnel-shifted out of two words; lanes past K meet zero activation codes. A block whose d is
// NaN (a non-finite input) makes the output NaN, tested on its bits since WGSL lets a GPU assume
// no float is NaN.
import { paramsWgsl } from '../kernel_params.js';
import { LINEAR_PARAMS } from './linear_common.wgsl.js';
import { q8BlockWgsl } from './packed_values.wgsl.js';

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

// The four weight codes from element index e as i8 lanes, and (int4) a block's zero point.
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

// The f32 steps: a block's term added to acc (sw: W's scale, dx: the row block's d as bits, sum:
// the block's exact integer dot), whether a d is non-finite, and an output's bits.
const STEPS = `fn blockStep(acc: f32, sw: f32, dx: u32, sum: i32) -> f32 {
  let scale = sw * bitcast<f32>(dx);
  let term = scale * f32(sum);
  return acc + term;
}
fn nonFiniteD(dx: u32) -> bool { return (dx & 0x7f800000u) == 0x7f800000u; }
fn outputBits(acc: f32, n: u32, nonFinite: bool) -> u32 {
  return select(bitcast<u32>(acc + bias[p.bOff + n]), NAN_BITS, nonFinite);
}
`;

/**
 * The uniforms (LINEAR_PARAMS; xOff and xStride unused: the codes are packed rows), bindings,
 * constants and functions of a q8 linear kernel for `weights` ('int8' | 'int4') and `dot`
 * ('dot4' | 'loop'). Bindings: 1 the codes (q8_rows.wgsl.js's, four per u32), 2 W's codes, 3 the
 * bias, 4 Y as f32 bits (a NaN written as such), 5 the rows' d per block as bits, 6 W's scales,
 * 7 (int4) W's zero points.
 */
export function q8LinearHeader({ weights, dot }) {
  const int4 = weights === 'int4';
  return `${paramsWgsl(LINEAR_PARAMS)}@group(0) @binding(1) var<storage, read> xq: array<u32>;
@group(0) @binding(2) var<storage, read> w: array<u32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<u32>;
@group(0) @binding(5) var<storage, read> xd: array<u32>;
@group(0) @binding(6) var<storage, read> scales: array<f32>;
${int4 ? '@group(0) @binding(7) var<storage, read> zeros: array<u32>;\n' : ''}${q8BlockWgsl}
const WORDS = Q8_BLOCK / 4u;  // activation words per block
const NAN_BITS = 0x7fc00000u;
const ONES = 0x01010101u;     // dot4(ONES, codes): the sum of four codes
${DOTS[dot]}${CODES[weights]}${STEPS}`;
}
