// The one K/V read of every attention kernel (flash variants, weights, decode): kAt(row, g, d) and
// vAt(row, g, d), the value d of K/V head g in K/V row `row` (keyRow()) as float32, generated once
// per storage dtype of the operand:
//   - 'float32': K and V as float32, at kOff + row·kStride + g·DK + d (a projection's output, or
//     a float32 cache's ring), strides in floats;
//   - 'float16' / 'int8': a narrow cache read where it is stored (cache_narrow.wgsl.js's layout,
//     packed_values.wgsl.js's reads): head g of row `row` starts at word
//     kOff + row·kStride + g·(words per head), strides in words; int8 multiplies q by the head's
//     scale, the word after its values (one float32 product, docs/attention-math/storage.md §11).
// No float32 copy of a narrow cache is ever made: each kernel widens the values it loads. The NaN
// rule's kernels (nonfinite_rows.wgsl.js) read the same heads as float32 bits instead
// (kBits / vBits, kvBitsReads()), so that a NaN or an infinity is never a float there.
import { cacheHeadWords } from './cache_narrow.wgsl.js';
import { VALUES_PER_WORD, packedRead, wordsOf } from './packed_values.wgsl.js';

// The WGSL expression of the first float (float32) or word (narrow) of K/V head g of row `row`.
const headStart = (dtype, name, width) => `p.${name}Off + row * p.${name}Stride + g * ${cacheHeadWords(dtype, width)}u`;

// WGSL of one operand (`name`: 'k' or 'v', at `binding`, `width` values per head).
function operandRead(dtype, name, binding, width) {
  const at = `${name}At`;
  if (dtype === 'float32') {
    return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<f32>;
fn ${at}(row: u32, g: u32, d: u32) -> f32 { return ${name}[${headStart(dtype, name, width)} + d]; }
`;
  }
  const head = headStart(dtype, name, width);
  const packed = `${name}Packed`;
  const value = `${packed}(head * ${VALUES_PER_WORD[dtype]}u + d)`;
  return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<u32>;
${packedRead(dtype, packed, name)}fn ${at}(row: u32, g: u32, d: u32) -> f32 {
  let head = ${head};
  return ${dtype === 'int8' ? `${value} * bitcast<f32>(${name}[head + ${wordsOf(dtype, width)}u])` : value};
}
`;
}

/**
 * WGSL of an attention kernel's K and V bindings and reads for K/V storage `kv` ('float32',
 * 'float16', 'int8'): K at binding `k` (head width dk), V at binding `v` (head width dv; omitted
 * when v is null: the weights kernel reads no values).
 */
export function kvReads({ kv = 'float32', dk, dv, k = 4, v = 5 }) {
  return operandRead(kv, 'k', k, dk) + (v === null ? '' : operandRead(kv, 'v', v, dv));
}

// The float32 bits of value d of one head, as a function body over `head` (its first word) and the
// u32 array `name`: never a non-finite float in arithmetic (WGSL lets a GPU assume there is none).
// float16: an all-ones exponent is widened by hand; int8: a head with a NaN or an infinity has a
// non-finite scale (cache_narrow.wgsl.js) and reads NaN.
const BITS = {
  float32: (name) => `return ${name}[head + d];`,
  float16: (name) => `let h16 = extractBits(${name}[head + d / 2u], 16u * (d % 2u), 16u);
  if ((h16 & 0x7c00u) == 0x7c00u) { return ((h16 & 0x8000u) << 16u) | 0x7f800000u | ((h16 & 0x3ffu) << 13u); }
  return bitcast<u32>(unpack2x16float(h16).x);`,
  int8: (name, width) => `let scale = ${name}[head + ${wordsOf('int8', width)}u];
  if ((scale & 0x7f800000u) == 0x7f800000u) { return 0x7fc00000u; }
  let stored = f32(extractBits(bitcast<i32>(${name}[head + d / 4u]), 8u * (d % 4u), 8u));
  return bitcast<u32>(stored * bitcast<f32>(scale));`,
};

/**
 * WGSL of K and V read as float32 bits, kBits(row, g, d) and vBits(row, g, d), for the kernels of
 * the NaN rule (nonfinite_rows.wgsl.js): bindings `k` and `v` as u32 arrays, K's with `kAccess`
 * ('read' or 'read_write': its buffer's tail holds the cache's flags).
 */
export function kvBitsReads({ kv = 'float32', dk, dv, k = 4, v = 5, kAccess = 'read' }) {
  const operand = (name, binding, width, access) => `@group(0) @binding(${binding}) var<storage, ${access}> ${name}: array<u32>;
fn ${name}Bits(row: u32, g: u32, d: u32) -> u32 {
  let head = ${headStart(kv, name, width)};
  ${BITS[kv](name, width)}
}
`;
  return operand('k', k, dk, kAccess) + operand('v', v, dv, 'read');
}
