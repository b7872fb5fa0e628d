// The storage of a float16 or int8 KV cache on the GPU (gpu_kv_cache.js), as the WASM core's
// cache stores it (docs/attention-math/storage.md §11), and the WGSL that stores a call's new key
// or value rows narrow, for the append kernel (cache_append.wgsl.js). The attention kernels read
// the rows where they are stored (kv_reads.wgsl.js).
//
// Layout: rows [B, capacity] of numKvHeads heads; each head's d values in whole u32 words (two
// float16 or four int8 per word, packed_values.wgsl.js, the last word of a head zero-padded), and
// for int8 the head's float32 scale (its bits) in the word after them: one scale per (position,
// K/V head), beside the values it scales, so that K (V) is one buffer and one binding whatever the
// dtype (a flash kernel over an int8 cache stays within WebGPU's default of 8 storage buffers).
// No word holds values of two heads or two rows, so each append invocation writes whole words of
// its own: no two invocations share a word.
//
// Rounding is the package's: float16 to nearest-even computed on the float32 bits (not
// pack2x16float, whose rounding WGSL leaves to the implementation); int8 q = round(x / scale),
// half to even, scale = max|x| / 127, both divisions rounded as the core's (q8_division.wgsl.js:
// WGSL's own may be off by 2.5 ULP, which moved the codes of values on a midpoint), an all-zero
// head (or one whose scale underflows) scale 0 and q 0. An int8 head holding a NaN or an
// infinity gets the WASM core's bits (storage_convert.h's quantise_q8): scale NaN (0x7fc00000),
// every q 0, so that it dequantises to NaN. The kernel finds such a head from the values' bits,
// in integer arithmetic, and never computes with a non-finite float (WGSL lets a GPU assume there
// is none).
import { VALUES_PER_WORD, wordsOf } from './packed_values.wgsl.js';
import { q8DivisionWgsl } from './q8_division.wgsl.js';

/** u32 words one head of `d` values takes in a cache row of `dtype` (int8: its scale's word too). */
export const cacheHeadWords = (dtype, d) => (dtype === 'float32' ? d : wordsOf(dtype, d) + (dtype === 'int8' ? 1 : 0));

// float32 bits → float16 bits, to nearest-even (web/src/half_floats.js's f32BitsToF16, in WGSL),
// and whether a float16 is an infinity or a NaN (as stored: a float32 above its range is one).
const F16_BITS = `
fn f16Bits(b: u32) -> u32 {
  let sign = (b >> 16u) & 0x8000u;
  let m = b & 0x7fffffffu;
  if (m > 0x7f800000u) { return sign | 0x7e00u | ((m >> 13u) & 0x3ffu); }
  if (m >= 0x477ff000u) { return sign | 0x7c00u; }
  if (m >= 0x38800000u) {
    let r = m - 0x38000000u;
    return sign | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
  }
  // Below 2^-14: an F16 subnormal, the value in units of 2^-24 (exact), rounded half to even.
  return sign | u32(round(bitcast<f32>(m) * 16777216.0));
}
fn halfNonFinite(h: u32) -> bool { return (h & 0x7c00u) == 0x7c00u; }
`;

/**
 * WGSL statements storing one new row of K or V in `dtype`. `side` names the append kernel's
 * (cache_append.wgsl.js) src and cache (arrays of u32), from (the row's first source value), to
 * (its first cache word), D (values per head), W (cache words per head: cacheHeadWords()) and top
 * (int8's per-head maxima, quantiseMaxima()). Each of the WG invocations (index t) takes every
 * WG-th value or word of the row's G heads, and sets `bad` where a stored value is an infinity or
 * a NaN (int8: a head's scale stored NaN).
 */
export function storeRowWgsl(dtype, side) {
  const { src, cache, from, to, D, W } = side;
  if (dtype === 'float32') {
    return `for (var c = t; c < G * ${D}; c += WG) {
    let x = ${src}[${from} + c];
    ${cache}[${to} + c] = x;
    bad = bad || nonFinite(x);
  }`;
  }
  if (dtype === 'float16') {
    // Each word two values of one head, rounded on their own; a head's odd last word pads with 0.
    return `for (var w = t; w < G * ${W}; w += WG) {
    let j = (w % ${W}) * 2u;
    let at = ${from} + (w / ${W}) * ${D} + j;
    let lo = f16Bits(${src}[at]);
    var hi = 0u;
    if (j + 1u < ${D}) { hi = f16Bits(${src}[at + 1u]); }
    ${cache}[${to} + w] = lo | (hi << 16u);
    bad = bad || halfNonFinite(lo) || halfNonFinite(hi);
  }`;
  }
  return `for (var w = t; w < G * ${W}; w += WG) {
    let h = w / ${W};
    let j = w % ${W};
    let amax = atomicLoad(&${side.top}[h]);
    let finite = amax < FINITE_END;
    let scale = over127(bitcast<f32>(select(0u, amax, finite)));
    var word = 0u;
    if (j == ${W} - 1u) {
      word = select(NAN_BITS, bitcast<u32>(scale), finite);
      bad = bad || !finite;
    } else if (scale > 0.0) {
      for (var k = 0u; k < PER8 && j * PER8 + k < ${D}; k++) {
        let q = quotientCode(bitcast<f32>(${src}[${from} + h * ${D} + j * PER8 + k]), scale, false);
        word |= (bitcast<u32>(q) & 0xffu) << (8u * k);
      }
    }
    ${cache}[${to} + w] = word;
  }`;
}

/**
 * int8: WGSL statements that find each head's max |x| of one new row (`side` as storeRowWgsl's)
 * into the workgroup atomics `top` (zeroed before, read after a barrier), as integers: |x|'s bits,
 * whose integer order is value order for non-negative floats, and every infinity or NaN lies
 * above the largest finite value.
 */
export function quantiseMaxima({ src, from, D, top }) {
  return `for (var c = t; c < G * ${D}; c += WG) { atomicMax(&${top}[c / ${D}], ${src}[${from} + c] & 0x7fffffffu); }`;
}

/** The WGSL functions and constants storeRowWgsl()'s statements of `dtype` use. */
export function storeHelpersWgsl(dtype) {
  if (dtype === 'float16') return F16_BITS;
  if (dtype !== 'int8') return '';
  return `const PER8 = ${VALUES_PER_WORD.int8}u;  // values per word
const FINITE_END = 0x7f800000u;  // |x|'s bits from here on: an infinity or a NaN
const NAN_BITS = 0x7fc00000u;    // the scale of a head holding one, as the WASM core stores it
${q8DivisionWgsl}`;
}
