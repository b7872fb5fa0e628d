// The storage of a float16 or int8 KV cache on the GPU (gpu_kv_cache.js), as the WASM core's
// cache stores it (docs/attention-math/storage.md §11), and its append kernel, which stores a call's new
// key or value rows narrow. The attention kernels read the rows where they are stored
// (kv_reads.wgsl.js).
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
import { paramsWgsl } from '../kernel_params.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { APPEND_PARAMS, APPEND_WORKGROUP } from './cache_append.wgsl.js';
import { VALUES_PER_WORD, wordsOf } from './packed_values.wgsl.js';
import { q8DivisionWgsl } from './q8_division.wgsl.js';
import { zeroWorkgroupAtomic } from './workgroup_zero.wgsl.js';

/** u32 words one head of `d` values takes in a cache row of `dtype` (int8: its scale's word too). */
export const cacheHeadWords = (dtype, d) => (dtype === 'float32' ? d : wordsOf(dtype, d) + (dtype === 'int8' ? 1 : 0));

// float32 → float16 bits, to nearest-even (web/src/half_floats.js's f32BitsToF16, in WGSL).
const F16_BITS = `
fn f16Bits(x: f32) -> u32 {
  let b = bitcast<u32>(x);
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
`;

/**
 * The append kernel's grid for `count` new rows of `heads` heads of `d` values, B batches (a
 * float32 cache's kernel, cache_append.wgsl.js, too): one invocation per float32 value or per
 * word of float16 values, in workgroups of APPEND_WORKGROUP along a row; int8 one workgroup per
 * (head, row, batch), which finds the head's scale once and writes all of its words.
 */
export function cacheAppendGrid(dtype, { heads, d, count, B }) {
  if (dtype === 'int8') return [heads, count, B];
  return [Math.ceil(heads * (dtype === 'float32' ? d : wordsOf(dtype, d)) / APPEND_WORKGROUP), count, B];
}

// The source row and the head's first cache word of new row i, batch b, head h.
const ROW_TABLE = rowTableWgsl(3, { shift: 'first', positions: false });
const HEAD_PLACE = `let row = p.srcOff + (b * p.count + i) * p.srcStride + h * p.d;
  let slot = (shiftOf(b) + i) % p.capacity;
  let head = ((cacheRow(b) * p.capacity + slot) * p.heads + h) * headWords;`;

// One invocation per word of a head's values: each word holds two values, rounded on their own.
const FLOAT16_APPEND = `
const PER = ${VALUES_PER_WORD.float16}u;  // values per word
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> cache: array<u32>;
${ROW_TABLE}${F16_BITS}
@compute @workgroup_size(${APPEND_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let headWords = (p.d + PER - 1u) / PER;
  let w = gid.x;
  if (w >= p.heads * headWords) { return; }
  let i = gid.y;
  let b = gid.z;
  let h = w / headWords;
  let j0 = (w % headWords) * PER;  // the first of this word's values in its head
  ${HEAD_PLACE}
  var word = f16Bits(src[row + j0]);
  if (j0 + 1u < p.d) { word |= f16Bits(src[row + j0 + 1u]) << 16u; }
  cache[head + w % headWords] = word;
}
`;

// One workgroup per (head, row, batch): its invocations find max |x| together, each over every
// APPEND_WORKGROUP-th value, as integers (|x|'s bits: for non-negative floats integer order is
// value order, and every infinity or NaN lies above the largest finite value), then each writes
// every APPEND_WORKGROUP-th word of the head's values, and the first the scale. The source is
// read as u32 so that a NaN or infinity is never a float in the shader.
const INT8_APPEND = `
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> cache: array<u32>;
${ROW_TABLE}const PER = ${VALUES_PER_WORD.int8}u;  // values per word
const WG = ${APPEND_WORKGROUP}u;
const FINITE_END = 0x7f800000u;  // |x|'s bits from here on: an infinity or a NaN
const NAN_BITS = 0x7fc00000u;    // the scale of a head holding one, as the WASM core stores it
var<workgroup> topBits: atomic<u32>;
${q8DivisionWgsl}
@compute @workgroup_size(${APPEND_WORKGROUP})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let perHead = (p.d + PER - 1u) / PER;  // words of the head's values; the scale's is the next
  let headWords = perHead + 1u;
  let h = wg.x;
  let i = wg.y;
  let b = wg.z;
  ${HEAD_PLACE}
  ${zeroWorkgroupAtomic('topBits')}
  var top = 0u;
  for (var j = t; j < p.d; j += WG) { top = max(top, src[row + j] & 0x7fffffffu); }
  atomicMax(&topBits, top);
  workgroupBarrier();
  let amax = atomicLoad(&topBits);
  let finite = amax < FINITE_END;
  let scale = over127(bitcast<f32>(select(0u, amax, finite)));
  if (t == 0u) { cache[head + perHead] = select(NAN_BITS, bitcast<u32>(scale), finite); }
  for (var w = t; w < perHead; w += WG) {
    var word = 0u;
    if (scale > 0.0) {
      for (var k = 0u; k < PER && w * PER + k < p.d; k++) {
        let q = quotientCode(bitcast<f32>(src[row + w * PER + k]), scale, false);
        word |= (bitcast<u32>(q) & 0xffu) << (8u * k);
      }
    }
    cache[head + w] = word;
  }
}
`;

/** The append kernel of `dtype` ('float16' | 'int8'), APPEND_PARAMS' uniforms; grid: cacheAppendGrid(). */
export function cacheAppendNarrowShader(dtype) {
  return `${paramsWgsl(APPEND_PARAMS)}${dtype === 'int8' ? INT8_APPEND : FLOAT16_APPEND}`;
}
