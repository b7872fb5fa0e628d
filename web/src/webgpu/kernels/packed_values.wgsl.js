// Values stored narrow in u32 words, as the WGSL kernels read them: the one definition of each
// storage dtype's word layout and of its read, used by the linear kernels (narrow weights,
// linear_common.wgsl.js) and by every attention kernel over a narrow KV cache (kv_reads.wgsl.js).
//
// Value i of a packed array is lane i mod PER of word i / PER (PER values per word, the first in
// the lowest bits), so a packed array is the narrow values in order, as the CPU packs them.
// float16 reads with unpack2x16float (no shader-f16 needed); a bfloat16 is the top half of a
// float32, so a shift moves it there; int8 is a sign-extending extractBits, and the caller
// multiplies by the value's scale (docs/attention-math/storage.md §11: q · scale is one float32 product,
// as the WASM core forms it). Arithmetic stays float32.
import { Q8_BLOCK } from '../../storage/storage_types.js';

/** Values per u32 word of each narrow storage dtype. */
export const VALUES_PER_WORD = { float16: 2, bfloat16: 2, int8: 4, int4: 8 };

/** Whether values of storage `dtype` ('float32' when not given) are packed in words. */
export const isPacked = (dtype) => dtype !== undefined && dtype !== 'float32';

/** A packed dtype's part of a pipeline or shape-class key (`:float16`), '' for float32 / none. */
export const packedKey = (dtype) => (isPacked(dtype) ? `:${dtype}` : '');

/** u32 words of `n` values of `dtype`. */
export const wordsOf = (dtype, n) => Math.ceil(n / VALUES_PER_WORD[dtype]);

/** WGSL: the q8_0 block (values per int8 scale along a weight row), from the one JS constant. */
export const q8BlockWgsl = `const Q8_BLOCK = ${Q8_BLOCK}u;\n`;

// Value `at` (0 … PER − 1, a WGSL expression) of a packed word, as f32: each dtype's one definition.
const WORD_VALUES = {
  float16: (word, at) => `unpack2x16float(${word})[${at}]`,
  bfloat16: (word, at) => `bitcast<f32>(select(${word} << 16u, ${word} & 0xffff0000u, (${at}) == 1u))`,
  // The integer q as float32 (exact); extractBits of an i32 sign-extends the byte.
  int8: (word, at) => `f32(extractBits(bitcast<i32>(${word}), 8u * (${at}), 8u))`,
  // The code 0-15 as float32 (exact); extractBits of a u32 does not extend the sign.
  int4: (word, at) => `f32(extractBits(${word}, 4u * (${at}), 4u))`,
};

/**
 * WGSL expression: value `at` of the u32 `word` (a name: it may be read twice) of `dtype`, as f32
 * (int8: q, unscaled; int4: the code, without its zero point). For kernels that read whole words
 * (linear_rows.wgsl.js): the same bits as packedRead()'s value.
 */
export const wordValue = (dtype, word, at) => WORD_VALUES[dtype](word, at);

/**
 * WGSL `fn name(i: u32) -> f32`: value i of the packed u32 array `array` of `dtype` (int8: q,
 * unscaled; int4: the code q, without its zero point). One function per array, since WGSL passes no storage buffer to a function.
 */
export function packedRead(dtype, name, array) {
  const per = VALUES_PER_WORD[dtype];
  return `fn ${name}(i: u32) -> f32 {\n  let word = ${array}[i / ${per}u];\n  return ${wordValue(dtype, 'word', `i % ${per}u`)};\n}\n`;
}
