// The storage of a float16 or int8 KV cache on the GPU (gpu_kv_cache.js), as the WASM core's
// cache stores it (docs/attention-math.md §11), and its append kernel, which stores a call's new
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
// pack2x16float, whose rounding WGSL leaves to the implementation); int8 q = round(x / scale)
// (WGSL's round() is half to even), scale = max|x| / 127 (WGSL's division is not correctly
// rounded: within 2.5 ulp, which only matters for a quotient that close to a tie).
import { paramsWgsl } from '../kernel_params.js';
import { APPEND_PARAMS, APPEND_WORKGROUP } from './cache_append.wgsl.js';
import { VALUES_PER_WORD, wordsOf } from './packed_values.wgsl.js';

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
 * The append kernel of `dtype` ('float16' | 'int8'), APPEND_PARAMS' uniforms. Grid: (⌈heads ·
 * value words per head / 64⌉, count, B): one invocation per word of values.
 */
export function cacheAppendNarrowShader(dtype) {
  const int8 = dtype === 'int8';
  return /* wgsl */ `
${paramsWgsl(APPEND_PARAMS)}
const PER = ${VALUES_PER_WORD[dtype]}u;  // values per word
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> cache: array<u32>;
${int8 ? '' : F16_BITS}
@compute @workgroup_size(${APPEND_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let perHead = (p.d + PER - 1u) / PER;  // words of a head's values
  let headWords = perHead${int8 ? ' + 1u' : ''};  // and its scale's
  let w = gid.x;
  if (w >= p.heads * perHead) { return; }
  let i = gid.y;
  let b = gid.z;
  let h = w / perHead;
  let j0 = (w % perHead) * PER;  // the first of this word's values in its head
  let row = p.srcOff + (b * p.count + i) * p.srcStride + h * p.d;
  let slot = (p.first + i) % p.capacity;
  let head = ((b * p.capacity + slot) * p.heads + h) * headWords;  // the head's first word
  ${int8 ? `// The head's scale, from all of its values (each word's invocation finds the same one).
  var amax = 0.0;
  for (var j = 0u; j < p.d; j++) { amax = max(amax, abs(src[row + j])); }
  let scale = amax / 127.0;
  if (j0 == 0u) { cache[head + perHead] = bitcast<u32>(scale); }
  var word = 0u;
  for (var t = 0u; t < PER; t++) {
    if (j0 + t < p.d && scale > 0.0) {
      let q = i32(clamp(round(src[row + j0 + t] / scale), -127.0, 127.0));
      word |= (bitcast<u32>(q) & 0xffu) << (8u * t);
    }
  }` : `var word = f16Bits(src[row + j0]);
  if (j0 + 1u < p.d) { word |= f16Bits(src[row + j0 + 1u]) << 16u; }`}
  cache[head + w % perHead] = word;
}
`;
}

