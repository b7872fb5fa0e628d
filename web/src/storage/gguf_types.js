// The GGML tensor types a GGUF file may name (llama.cpp's ggml.h `enum ggml_type`), in ONE table:
// id → name, elements per block, bytes per block, what loadGguf() returns for it as stored
// (`kept`), and its dequantiser to float32 (`dequantize`, llama.cpp's `dequantize_row_*`
// rules, ggml-quants.c). Every known type has its sizes here, including those the loader does not
// decode (K-quants, IQ*, integers): the layout checks (sizes, ranges, overlap) then hold for
// every tensor of a file, and the refusal of such a tensor names its type instead of "unknown".
// Ids missing from the table were never assigned or were removed from ggml (4, 5, 31–33, 36–38):
// a file naming one is refused as unknown.

/** An F16 bit pattern as a number, exactly (binary16 is a subset of binary64). */
export function f16Value(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (exponent === 0 ? mantissa * 2 ** -24 : 2 ** (exponent - 15) * (1 + mantissa / 1024));
}

const f16At = (bytes, p) => f16Value(bytes[p] | (bytes[p + 1] << 8));

// The dequantisers: (bytes, offset of the first block, blocks, out: Float32Array). Each block's
// value is computed as llama.cpp computes it in float32: q·d (and + m) where q·d is exact in
// float32 (a code of at most 8 bits times an f16), so the one rounding of the Float32Array store
// after + m in float64 (exact: both terms are float32 within 2^53 of each other) is float32's.

/** Q4_0 (18 bytes: f16 d, 16 bytes of nibbles): element j is low nibble j, j + 16 the high one; (q − 8)·d. */
function dequantizeQ4_0(bytes, at, blocks, out) {
  for (let b = 0, p = at, o = 0; b < blocks; b++, p += 18, o += 32) {
    const d = f16At(bytes, p);
    for (let j = 0; j < 16; j++) {
      const q = bytes[p + 2 + j];
      out[o + j] = ((q & 0x0f) - 8) * d;
      out[o + j + 16] = ((q >> 4) - 8) * d;
    }
  }
}

/** Q4_1 (20 bytes: f16 d, f16 m, 16 bytes of nibbles): q·d + m. */
function dequantizeQ4_1(bytes, at, blocks, out) {
  for (let b = 0, p = at, o = 0; b < blocks; b++, p += 20, o += 32) {
    const d = f16At(bytes, p);
    const m = f16At(bytes, p + 2);
    for (let j = 0; j < 16; j++) {
      const q = bytes[p + 4 + j];
      out[o + j] = (q & 0x0f) * d + m;
      out[o + j + 16] = (q >> 4) * d + m;
    }
  }
}

/**
 * Q5_0 (22 bytes: f16 d, 4 bytes qh, 16 of nibbles) and Q5_1 (24: f16 d, f16 m, qh, nibbles): bit
 * j of qh (little-endian uint32) is the fifth bit of element j; (q − 16)·d, or q·d + m for Q5_1.
 */
function dequantizeQ5(bytes, at, blocks, out, withMin) {
  const size = withMin ? 24 : 22;
  const high = withMin ? 4 : 2;
  for (let b = 0, p = at, o = 0; b < blocks; b++, p += size, o += 32) {
    const d = f16At(bytes, p);
    const m = withMin ? f16At(bytes, p + 2) : 0;
    const qh = (bytes[p + high] | (bytes[p + high + 1] << 8) | (bytes[p + high + 2] << 16) | (bytes[p + high + 3] << 24)) >>> 0;
    const offset = withMin ? 0 : -16;
    for (let j = 0; j < 16; j++) {
      const q = bytes[p + high + 4 + j];
      const x0 = ((q & 0x0f) | (((qh >>> j) << 4) & 0x10)) + offset;
      const x1 = ((q >> 4) | ((qh >>> (j + 12)) & 0x10)) + offset;
      // Q5_0 is x·d alone, as llama.cpp's: + 0 would turn its −0 into +0.
      out[o + j] = withMin ? x0 * d + m : x0 * d;
      out[o + j + 16] = withMin ? x1 * d + m : x1 * d;
    }
  }
}

/** Q8_0 (34 bytes: f16 d, 32 int8): q·d. */
function dequantizeQ8_0(bytes, at, blocks, out) {
  for (let b = 0, p = at, o = 0; b < blocks; b++, p += 34, o += 32) {
    const d = f16At(bytes, p);
    for (let j = 0; j < 32; j++) out[o + j] = ((bytes[p + 2 + j] << 24) >> 24) * d;
  }
}

/** F32 / F16 / BF16 element by element (dequantize: true makes every tensor float32). */
const dequantizeF32 = (bytes, at, count, out) => {
  const view = new DataView(bytes.buffer, bytes.byteOffset + at, count * 4);
  for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
};
const dequantizeF16 = (bytes, at, count, out) => {
  for (let i = 0, p = at; i < count; i++, p += 2) out[i] = f16At(bytes, p);
};
const dequantizeBF16 = (bytes, at, count, out) => {
  // bfloat16 is the top half of a float32; written as bits, so a NaN keeps its payload.
  const bits = new Uint32Array(out.buffer, out.byteOffset, count);
  for (let i = 0, p = at; i < count; i++, p += 2) bits[i] = ((bytes[p] << 16) | (bytes[p + 1] << 24)) >>> 0;
};

/**
 * id → { name, block (elements), bytes (per block), kept, dequantize }. `kept`: how loadGguf()
 * returns the type without dequantize: 'float32', 'float16' / 'bfloat16' (a Uint16Array tensor),
 * 'q8_0' / 'q4_0' (the blocks as stored), or null (float32 only through dequantize, when there is a
 * dequantiser). Sizes: ggml.c's type_traits (blck_size, type_size).
 */
export const GGML_TYPES = new Map([
  [0, { name: 'F32', block: 1, bytes: 4, kept: 'float32', dequantize: dequantizeF32 }],
  [1, { name: 'F16', block: 1, bytes: 2, kept: 'float16', dequantize: dequantizeF16 }],
  [2, { name: 'Q4_0', block: 32, bytes: 18, kept: 'q4_0', dequantize: dequantizeQ4_0 }],
  [3, { name: 'Q4_1', block: 32, bytes: 20, kept: null, dequantize: dequantizeQ4_1 }],
  [6, { name: 'Q5_0', block: 32, bytes: 22, kept: null, dequantize: (b, a, n, o) => dequantizeQ5(b, a, n, o, false) }],
  [7, { name: 'Q5_1', block: 32, bytes: 24, kept: null, dequantize: (b, a, n, o) => dequantizeQ5(b, a, n, o, true) }],
  [8, { name: 'Q8_0', block: 32, bytes: 34, kept: 'q8_0', dequantize: dequantizeQ8_0 }],
  [9, { name: 'Q8_1', block: 32, bytes: 36, kept: null, dequantize: null }],
  [10, { name: 'Q2_K', block: 256, bytes: 84, kept: null, dequantize: null }],
  [11, { name: 'Q3_K', block: 256, bytes: 110, kept: null, dequantize: null }],
  [12, { name: 'Q4_K', block: 256, bytes: 144, kept: null, dequantize: null }],
  [13, { name: 'Q5_K', block: 256, bytes: 176, kept: null, dequantize: null }],
  [14, { name: 'Q6_K', block: 256, bytes: 210, kept: null, dequantize: null }],
  [15, { name: 'Q8_K', block: 256, bytes: 292, kept: null, dequantize: null }],
  [16, { name: 'IQ2_XXS', block: 256, bytes: 66, kept: null, dequantize: null }],
  [17, { name: 'IQ2_XS', block: 256, bytes: 74, kept: null, dequantize: null }],
  [18, { name: 'IQ3_XXS', block: 256, bytes: 98, kept: null, dequantize: null }],
  [19, { name: 'IQ1_S', block: 256, bytes: 50, kept: null, dequantize: null }],
  [20, { name: 'IQ4_NL', block: 32, bytes: 18, kept: null, dequantize: null }],
  [21, { name: 'IQ3_S', block: 256, bytes: 110, kept: null, dequantize: null }],
  [22, { name: 'IQ2_S', block: 256, bytes: 82, kept: null, dequantize: null }],
  [23, { name: 'IQ4_XS', block: 256, bytes: 136, kept: null, dequantize: null }],
  [24, { name: 'I8', block: 1, bytes: 1, kept: null, dequantize: null }],
  [25, { name: 'I16', block: 1, bytes: 2, kept: null, dequantize: null }],
  [26, { name: 'I32', block: 1, bytes: 4, kept: null, dequantize: null }],
  [27, { name: 'I64', block: 1, bytes: 8, kept: null, dequantize: null }],
  [28, { name: 'F64', block: 1, bytes: 8, kept: null, dequantize: null }],
  [29, { name: 'IQ1_M', block: 256, bytes: 56, kept: null, dequantize: null }],
  [30, { name: 'BF16', block: 1, bytes: 2, kept: 'bfloat16', dequantize: dequantizeBF16 }],
  [34, { name: 'TQ1_0', block: 256, bytes: 54, kept: null, dequantize: null }],
  [35, { name: 'TQ2_0', block: 256, bytes: 66, kept: null, dequantize: null }],
  [39, { name: 'MXFP4', block: 32, bytes: 17, kept: null, dequantize: null }],
]);

/** Names of the types loadGguf() can return as float32 with { dequantize: true }. */
export const DEQUANTIZED_TYPES = [...GGML_TYPES.values()].filter((t) => t.dequantize).map((t) => t.name);
