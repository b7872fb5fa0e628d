// WGSL kernels of a float16 or int8 KV cache on the GPU (gpu_kv_cache.js), the storage the WASM
// core's cache has (docs/attention-math.md): append, which stores a call's new key or value rows
// narrow, and widen, which writes the cached rows back as float32 for the attention kernels.
//
// Layout: rows [B, capacity] of numKvHeads heads, each head's d values in whole u32 words (two
// float16 or four int8 per word, the last word of a head zero-padded), so that no word holds
// values of two heads or two rows and each append invocation writes whole words of its own: no
// two invocations share a word. int8 rows carry one float32 scale per (position, head):
// scales[(b·capacity + slot)·heads + h].
//
// Rounding is the package's: float16 to nearest-even computed on the float32 bits (not
// pack2x16float, whose rounding WGSL leaves to the implementation); int8 q = round(x / scale)
// (WGSL's round() is half to even), scale = max|x| / 127 (WGSL's division is not correctly
// rounded: within 2.5 ulp, which only matters for a quotient that close to a tie). Widening
// float16 reads the words with unpack2x16float.
import { paramsWgsl } from '../kernel_params.js';

/** Invocations per workgroup, along a row's words (append) or values (widen). */
export const NARROW_CACHE_WORKGROUP = 64;

/** Values per u32 word of each narrow cache dtype. */
export const VALUES_PER_WORD = { float16: 2, int8: 4 };

/** u32 words of one head's d values. */
export const wordsPerHead = (dtype, d) => Math.ceil(d / VALUES_PER_WORD[dtype]);

/** Both kernels' uniforms, in order (kernel_params.js makes the struct and the packing). */
export const NARROW_CACHE_PARAMS = [
  ['count', 'u32', 'append: new rows per batch (L); widen: slots per batch to widen'],
  ['heads', 'u32', 'numKvHeads'],
  ['d', 'u32', 'values per head (headDim or valueHeadDim)'],
  ['srcOff', 'u32', 'append: new row (b, i) at src[srcOff + (b·count + i)·srcStride]'],
  ['srcStride', 'u32'],
  ['capacity', 'u32', 'cache rows per batch'],
  ['first', 'u32', 'append: position of new row 0 (the cache\'s length before the call)'],
];

const common = (dtype) => `${paramsWgsl(NARROW_CACHE_PARAMS)}
const PER = ${VALUES_PER_WORD[dtype]}u;  // values per word
fn wordsPerHead() -> u32 { return (p.d + PER - 1u) / PER; }
`;

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

/** The append kernel of `dtype` ('float16' | 'int8'). Grid: (⌈heads·wordsPerHead / 64⌉, count, B). */
export function cacheAppendNarrowShader(dtype) {
  const int8 = dtype === 'int8';
  return /* wgsl */ `
${common(dtype)}@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> cache: array<u32>;
${int8 ? '@group(0) @binding(3) var<storage, read_write> scales: array<f32>;' : F16_BITS}
@compute @workgroup_size(${NARROW_CACHE_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let perHead = wordsPerHead();
  let w = gid.x;
  if (w >= p.heads * perHead) { return; }
  let i = gid.y;
  let b = gid.z;
  let h = w / perHead;
  let j0 = (w % perHead) * PER;  // the first of this word's values in its head
  let row = p.srcOff + (b * p.count + i) * p.srcStride + h * p.d;
  let slot = (p.first + i) % p.capacity;
  ${int8 ? `// The head's scale, from all of its values (each word's invocation finds the same one).
  var amax = 0.0;
  for (var j = 0u; j < p.d; j++) { amax = max(amax, abs(src[row + j])); }
  let scale = amax / 127.0;
  if (j0 == 0u) { scales[(b * p.capacity + slot) * p.heads + h] = scale; }
  var word = 0u;
  for (var t = 0u; t < PER; t++) {
    if (j0 + t < p.d && scale > 0.0) {
      let q = i32(clamp(round(src[row + j0 + t] / scale), -127.0, 127.0));
      word |= (bitcast<u32>(q) & 0xffu) << (8u * t);
    }
  }` : `var word = f16Bits(src[row + j0]);
  if (j0 + 1u < p.d) { word |= f16Bits(src[row + j0 + 1u]) << 16u; }`}
  cache[(b * p.capacity + slot) * p.heads * perHead + w] = word;
}
`;
}

/**
 * The widen kernel of `dtype`: slots [0, count) of every batch, as float32 rows [B, capacity,
 * heads·d] (the float32 cache's layout, which the attention kernels read). Grid: (⌈heads·d / 64⌉,
 * count, B).
 */
export function cacheWidenShader(dtype) {
  const int8 = dtype === 'int8';
  return /* wgsl */ `
${common(dtype)}@group(0) @binding(1) var<storage, read> cache: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
${int8 ? '@group(0) @binding(3) var<storage, read> scales: array<f32>;' : ''}
@compute @workgroup_size(${NARROW_CACHE_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let c = gid.x;
  if (c >= p.heads * p.d) { return; }
  let slot = gid.y;
  let b = gid.z;
  let h = c / p.d;
  let j = c % p.d;
  let row = b * p.capacity + slot;
  let word = cache[row * p.heads * wordsPerHead() + h * wordsPerHead() + j / PER];
  ${int8 ? `// extractBits of an i32 sign-extends the byte.
  let q = extractBits(bitcast<i32>(word), 8u * (j % PER), 8u);
  out[row * p.heads * p.d + c] = f32(q) * scales[row * p.heads + h];`
    : 'out[row * p.heads * p.d + c] = unpack2x16float(word)[j % PER];'}
}
`;
}

/**
 * WGSL for an attention kernel that reads a narrow cache's keys and values where they are stored
 * (the decode path): K and V as u32 words at bindings 4 and 5 (int8: their scales at 7 and 8)
 * and kAt / vAt(row, g, d), the value d of K/V head g in cache row `row` as float32. The caller
 * sets kStride / vStride to a row's words (heads · words per head) and kOff / vOff to 0.
 */
export function narrowKvReads(dtype, dk, dv) {
  const int8 = dtype === 'int8';
  const read = (buffer, width, scales) => {
    const words = wordsPerHead(dtype, width);
    const at = `${buffer}[row * p.${buffer}Stride + g * ${words}u + d / ${VALUES_PER_WORD[dtype]}u]`;
    return int8
      ? `let word = ${at};\n  return f32(extractBits(bitcast<i32>(word), 8u * (d % 4u), 8u)) * ${scales}[row * (p.${buffer}Stride / ${words}u) + g];`
      : `return unpack2x16float(${at})[d % 2u];`;
  };
  return /* wgsl */ `
@group(0) @binding(4) var<storage, read> k: array<u32>;
@group(0) @binding(5) var<storage, read> v: array<u32>;
${int8 ? `@group(0) @binding(7) var<storage, read> kScales: array<f32>;
@group(0) @binding(8) var<storage, read> vScales: array<f32>;` : ''}
fn kAt(row: u32, g: u32, d: u32) -> f32 {
  ${read('k', dk, 'kScales')}
}
fn vAt(row: u32, g: u32, d: u32) -> f32 {
  ${read('v', dv, 'vScales')}
}
`;
}
