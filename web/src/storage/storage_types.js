// The storage types (docs/attention-math/storage.md §11), one row each: the package's one list of them.
// The core's own table (cpp/include/webattention/storage_type.h's kStorageTypes) is its C++ twin,
// and tests/js/storage_types.test.js reads that one through the binding and checks the two, and
// the TypeScript unions (web/types/tensors.d.ts), agree.
//   bits: of one stored value (an int8 or int4 block's scale is extra); block: values of a weight
//   row per scale (0: none); weights / cache / source: a module's weight matrices, a KV cache's
//   keys and values, and loadStateDict()'s tensors may be of it; activations: a module's
//   projection inputs may be computed in it (create()'s activations).
export const STORAGE_TYPES = Object.freeze([
  { name: 'float32', bits: 32, block: 0, weights: true, cache: true, source: true, activations: true },
  { name: 'float16', bits: 16, block: 0, weights: true, cache: true, source: true, activations: false },
  { name: 'bfloat16', bits: 16, block: 0, weights: true, cache: false, source: true, activations: false },
  { name: 'int8', bits: 8, block: 32, weights: true, cache: true, source: false, activations: true },
  { name: 'int4', bits: 4, block: 32, weights: true, cache: false, source: false, activations: false },
].map(Object.freeze));

const names = (keep) => Object.freeze(STORAGE_TYPES.filter(keep).map((t) => t.name));

/** create()'s weightsDtype choices. */
export const WEIGHTS_DTYPES = names((t) => t.weights);
/** create()'s activations choices: 'float32' (exact on the stored weights) or 'int8'. */
export const ACTIVATIONS_DTYPES = names((t) => t.activations);
/** The weightsDtypes that int8 activations multiply in integers: those stored in blocks (int8, int4). */
export const INTEGER_WEIGHTS_DTYPES = names((t) => t.block > 0);
/** createCache()'s and encode()'s dtype choices. */
export const CACHE_DTYPES = names((t) => t.cache);
/** The 16-bit float types (a Uint16Array of bits holds either). */
export const HALF_DTYPES = names((t) => t.bits === 16);
/** Values of a weight row per int8 scale (llama.cpp's q8_0 block). */
export const Q8_BLOCK = STORAGE_TYPES.find((t) => t.name === 'int8').block;
/** Values of a weight row per int4 scale and zero point (llama.cpp's q4_0 block). */
export const Q4_BLOCK = STORAGE_TYPES.find((t) => t.name === 'int4').block;
/**
 * ORT MatMulNBits' block sizes loadStateDict() takes as stored: whole multiples of the int4
 * block, each loaded as that many int4 blocks sharing its scale and zero point.
 */
export const MATMUL_NBITS_BLOCKS = Object.freeze([1, 2, 4, 8].map((m) => m * Q4_BLOCK));
