// WGSL kernel: a float16 GPU input (forward()'s { gpuBuffer, shape, dtype: 'float16' }) widened to
// float32 on the device, before the projections read it. No shader-f16 needed: the halves are
// read as u32 words, two per word (the low half first: little-endian, as a Uint16Array lays them
// out), and each is decoded with integer operations into the f32 of the same value: every f16
// (subnormals, ±0, ±Inf, NaN with its payload) is an f32, so the widening is exact, bit for bit
// the host's widenHalf(). unpack2x16float() would say the same where the GPU keeps f16 subnormals,
// but WGSL lets an implementation flush them; the integer decode leaves nothing to the GPU.
// The f32 bits are stored as u32: no float store can canonicalise a NaN.
import { paramsWgsl } from '../kernel_params.js';

export const WIDEN_HALF_PARAMS = [['count', 'u32', 'halves to widen (the last word may hold one)']];
export const WIDEN_HALF_WORKGROUP = 64;
/** Workgroups along x, at most: a larger input takes rows of them (y). */
export const WIDEN_HALF_ROW = 32768;

export function widenHalfShader() {
  return /* wgsl */ `
${paramsWgsl(WIDEN_HALF_PARAMS)}@group(0) @binding(1) var<storage, read> halves: array<u32>;  // ceil(count / 2) words
@group(0) @binding(2) var<storage, read_write> widened: array<u32>;  // count f32 bit patterns

fn widen(h: u32) -> u32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  let m = h & 0x3ffu;
  if (e == 0x1fu) { return sign | 0x7f800000u | (m << 13u); }  // Inf, NaN (payload kept)
  if (e != 0u) { return sign | ((e + 112u) << 23u) | (m << 13u); }
  if (m == 0u) { return sign; }
  // A subnormal m · 2^-24: its top bit at t gives the f32 exponent t − 24 + 127.
  let t = 31u - countLeadingZeros(m);
  return sign | ((t + 103u) << 23u) | ((m << (23u - t)) & 0x7fffffu);
}

// Grid: (min(words / 64, ${WIDEN_HALF_ROW}), rows, 1); one invocation per word (two halves).
@compute @workgroup_size(${WIDEN_HALF_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let w = gid.y * ${WIDEN_HALF_ROW * WIDEN_HALF_WORKGROUP}u + gid.x;
  let first = 2u * w;
  if (first >= p.count) { return; }
  let word = halves[w];
  widened[first] = widen(word & 0xffffu);
  if (first + 1u < p.count) { widened[first + 1u] = widen(word >> 16u); }
}
`;
}

/** The grid for `count` halves. */
export function widenHalfGrid(count) {
  const groups = Math.ceil(Math.ceil(count / 2) / WIDEN_HALF_WORKGROUP);
  return [Math.min(groups, WIDEN_HALF_ROW), Math.ceil(groups / WIDEN_HALF_ROW), 1];
}

/**
 * The reverse, for a float16 call's 'gpu-buffer' results: float32 values (read as bits) rounded to
 * float16 bits, two to a word (low half first), to nearest-even by integer operations, bit for
 * bit the host's f32BitsToF16() (storage/half_floats.js): NaN quieted with its payload's top bits,
 * 65520 and above to infinity, subnormals rounded in units of 2^-24. Grid: narrowHalfGrid().
 */
export function narrowHalfShader() {
  return /* wgsl */ `
${paramsWgsl(WIDEN_HALF_PARAMS)}@group(0) @binding(1) var<storage, read> values: array<u32>;  // count f32 bit patterns
@group(0) @binding(2) var<storage, read_write> halves: array<u32>;  // ceil(count / 2) words

fn narrow(x: u32) -> u32 {
  let sign = (x >> 16u) & 0x8000u;
  let mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) { return sign | 0x7e00u | ((mag >> 13u) & 0x3ffu); }  // NaN
  if (mag >= 0x477ff000u) { return sign | 0x7c00u; }
  if (mag >= 0x38800000u) {
    let r = mag - 0x38000000u;  // rebiased (127 → 15); a carry out of the mantissa bumps the exponent
    return sign | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
  }
  // Below 2^-14: the value in units of 2^-24 is the significand shifted right by 126 − e (from 14
  // on), rounded half to even; past 24 places nothing reaches half a unit.
  let e = mag >> 23u;
  let shift = select(126u - e, 125u, e == 0u);
  if (shift > 24u) { return sign; }
  let significand = select(mag | 0x800000u, mag, e == 0u) & 0xffffffu;
  let q = significand >> shift;
  let rest = significand & ((1u << shift) - 1u);
  let half = 1u << (shift - 1u);
  return sign | (q + select(0u, 1u, rest > half || (rest == half && (q & 1u) == 1u)));
}

// One invocation per word (two values).
@compute @workgroup_size(${WIDEN_HALF_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let w = gid.y * ${WIDEN_HALF_ROW * WIDEN_HALF_WORKGROUP}u + gid.x;
  let first = 2u * w;
  if (first >= p.count) { return; }
  var word = narrow(values[first]);
  if (first + 1u < p.count) { word = word | (narrow(values[first + 1u]) << 16u); }
  halves[w] = word;
}
`;
}

/** The grid for `count` values narrowed (one invocation per word, as widenHalfGrid()). */
export const narrowHalfGrid = widenHalfGrid;
