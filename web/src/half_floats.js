// IEEE binary16 (F16) and bfloat16 (BF16) to float32, exactly: both are subsets of float32, so
// every value (subnormals, ±0, ±inf) has one float32 that equals it. NaNs keep sign and payload
// bits, and come out bit for bit as PyTorch's conversions give them (tests/fixtures/safetensors):
// an F16 NaN is quieted (as the x86 F16C and Arm conversion instructions do), a BF16 NaN is not
// (PyTorch shifts its bits). The conversions build float32 bit patterns, not numbers: a NaN
// written as a number may lose its payload, bits cannot. Bytes are read one at a time (little-endian, as safetensors stores them),
// so the source needs no alignment and the host's byte order does not matter; the Uint32Array
// written and the Float32Array returned share the host's order.

let f16Table = null;

/** float32 bits of every F16 bit pattern (256 KiB, made on first use). */
function f16ToF32Bits() {
  if (f16Table) return f16Table;
  const table = new Uint32Array(65536);
  const asFloat = new Float32Array(table.buffer);
  for (let h = 0; h < 65536; h++) {
    const sign = (h & 0x8000) << 16;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0x1f) {
      // inf (mantissa 0) or NaN: float32's all-ones exponent, the payload moved to the top bits
      // and, for a NaN, the quiet bit set.
      table[h] = (sign | 0x7f800000 | (mantissa ? 0x400000 : 0) | (mantissa << 13)) >>> 0;
    } else if (exponent === 0) {
      // ±0 and subnormals, mantissa · 2⁻²⁴: a normal float32, exact (10 significant bits at most).
      asFloat[h] = (sign ? -1 : 1) * mantissa * 2 ** -24;
    } else {
      // Normal: rebias the exponent (15 → 127), widen the mantissa (10 → 23 bits).
      table[h] = (sign | ((exponent + 112) << 23) | (mantissa << 13)) >>> 0;
    }
  }
  f16Table = table;
  return table;
}

/** Whether this host's typed arrays are little-endian, as safetensors data is (all common ones). */
export const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Writes `count` little-endian values of `dtype` ('F32' | 'F16' | 'BF16') from bytes[offset...]
 * as float32 bit patterns into bits[at...] (a Uint32Array: read it through a Float32Array on the
 * same memory). Any alignment of `offset`.
 */
export function toFloat32Bits(dtype, bytes, offset, count, bits, at) {
  if (dtype === 'F16') {
    const table = f16ToF32Bits();
    for (let i = at, p = offset; i < at + count; i++, p += 2) bits[i] = table[bytes[p] | (bytes[p + 1] << 8)];
  } else if (dtype === 'BF16') {
    // bfloat16 is the top half of a float32: its bits shifted up 16 are that float32.
    for (let i = at, p = offset; i < at + count; i++, p += 2) bits[i] = ((bytes[p] << 16) | (bytes[p + 1] << 24)) >>> 0;
  } else if (LITTLE_ENDIAN_HOST) {
    new Uint8Array(bits.buffer, bits.byteOffset + at * 4, count * 4).set(bytes.subarray(offset, offset + count * 4));
  } else {
    for (let i = at, p = offset; i < at + count; i++, p += 4) {
      bits[i] = (bytes[p] | (bytes[p + 1] << 8) | (bytes[p + 2] << 16) | (bytes[p + 3] << 24)) >>> 0;
    }
  }
}
