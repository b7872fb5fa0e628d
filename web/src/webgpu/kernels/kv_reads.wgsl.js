// The one K/V read of every attention kernel (flash variants, weights, decode): kAt(row, g, d) and
// vAt(row, g, d), the value d of K/V head g in K/V row `row` (keyRow()) as float32, generated once
// per storage dtype of the operand:
//   - 'float32': K and V as float32, at kOff + row·kStride + g·DK + d (a projection's output, or
//     a float32 cache's ring), strides in floats;
//   - 'float16' / 'int8': a narrow cache read where it is stored (cache_narrow.wgsl.js's layout,
//     packed_values.wgsl.js's reads): head g of row `row` starts at word
//     kOff + row·kStride + g·(words per head), strides in words; int8 multiplies q by the head's
//     scale, the word after its values (one float32 product, docs/attention-math.md §11).
// No float32 copy of a narrow cache is ever made: each kernel widens the values it loads.
import { cacheHeadWords } from './cache_narrow.wgsl.js';
import { VALUES_PER_WORD, packedRead, wordsOf } from './packed_values.wgsl.js';

// WGSL of one operand (`name`: 'k' or 'v', at `binding`, `width` values per head).
function operandRead(dtype, name, binding, width) {
  const at = `${name}At`;
  if (dtype === 'float32') {
    return `@group(0) @binding(${binding}) var<storage, read> ${name}: array<f32>;
fn ${at}(row: u32, g: u32, d: u32) -> f32 { return ${name}[p.${name}Off + row * p.${name}Stride + g * ${width}u + d]; }
`;
  }
  const head = `p.${name}Off + row * p.${name}Stride + g * ${cacheHeadWords(dtype, width)}u`;
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
