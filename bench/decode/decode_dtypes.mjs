// The decode benchmark's storage axis (bench/decode/decode.mjs --dtypes): which weights + cache dtype
// pair each short name stands for, and the bytes a decode step of each must read (its memory
// bound's numerator). The byte counts follow docs/attention-math/storage.md §11 ("Memory").

/**
 * Short name → create({ weightsDtype }) and createCache({ dtype }); f32 is the reference. `ort`:
 * onnxruntime-web's step graph with its weights stored alike (onnx_decode_model.mjs's
 * ORT_WEIGHTS; its wasm EP keeps the K/V cache in f32 whatever the weights).
 */
export const DTYPES = {
  f32: { weights: 'float32', cache: 'float32', ort: 'f32' },
  f16: { weights: 'float16', cache: 'float16', ort: 'f16' },
  i8: { weights: 'int8', cache: 'int8', ort: 'q8' },
  // int4 weights have no cache dtype of their own: the narrowest cache, int8.
  i4: { weights: 'int4', cache: 'int8', ort: 'q4' },
  // int8 activations (create({ activations: 'int8' })): the same stored bytes as i8 / i4; ORT's
  // counterpart is MatMulNBits' accuracy_level 4.
  i8a8: { weights: 'int8', cache: 'int8', activations: 'int8', ort: 'q8a8', bytesLike: 'i8' },
  i4a8: { weights: 'int4', cache: 'int8', activations: 'int8', ort: 'q4a8', bytesLike: 'i4' },
};
export const REFERENCE_DTYPE = 'f32';

// Bytes per weight-matrix entry: int8 stores one byte plus one f32 scale per block of 32 inputs,
// int4 half a byte plus an f32 scale per block (5 bits: quantised at load, every zero point is 8
// and all panels read one panel's; every row length here is a multiple of 32). Biases stay f32 in
// every dtype.
const WEIGHT_BYTES = { f32: 4, f16: 2, i8: 1 + 4 / 32, i4: 0.5 + 4 / 32 };
// Bytes per cached position and K/V head for head width d (dk = dv = d, a multiple of 8 so no
// padding): K and V elements, plus for int8 one f32 scale for the keys and one for the values.
const INT8_CACHE_BYTES = (d) => 2 * d + 2 * 4;
const CACHE_BYTES = { f32: (d) => 4 * 2 * d, f16: (d) => 2 * 2 * d, i8: INT8_CACHE_BYTES, i4: INT8_CACHE_BYTES };

/** '--dtypes' text ('f16,i8') → its names, in order. Throws on an unknown or repeated name. */
export function dtypeNames(text) {
  const names = text.split(',').map((s) => s.trim()).filter(Boolean);
  for (const [i, name] of names.entries()) {
    if (!DTYPES[name]) throw new Error(`--dtypes: unknown dtype '${name}' (expected a list of ${Object.keys(DTYPES).join(', ')})`);
    if (names.indexOf(name) !== i) throw new Error(`--dtypes: '${name}' given twice`);
  }
  return names;
}

/**
 * '--dtypes' text ('f32,f16,i8') → the list, f32 first (added when missing: the speed-ups and
 * the outputs' differences are against it). Throws on an unknown or repeated name.
 */
export function parseDtypes(text) {
  const names = dtypeNames(text);
  return [REFERENCE_DTYPE, ...names.filter((n) => n !== REFERENCE_DTYPE)];
}

/**
 * Bytes one decode step of dtype must read at (E, h, hkv), head width d, n cached positions:
 * { weights (the four projections' matrices, scales and f32 biases), cache (K and V of n
 * positions, scales included) }.
 */
export function stepBytes({ E, h, hkv }, d, n, dtype = REFERENCE_DTYPE) {
  const q = h * d, kv = hkv * d;
  const matrixEntries = E * q + 2 * E * kv + q * E;
  const biasEntries = q + 2 * kv + E;
  const stored = DTYPES[dtype].bytesLike ?? dtype;
  return { weights: WEIGHT_BYTES[stored] * matrixEntries + 4 * biasEntries, cache: n * hkv * CACHE_BYTES[stored](d) };
}
