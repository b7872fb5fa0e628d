// Safetensors files built byte by byte for the loader's tests and its fuzzer
// (tests/fuzz/safetensors_fuzz.mjs): valid ones, and hostile ones whose header length, header
// text or data are whatever a case needs.
import { readFileSync } from 'node:fs';

/**
 * header: an object (JSON-encoded here), a string (the header text as is: duplicate keys, odd
 * numbers) or a Uint8Array (the header bytes as is: invalid UTF-8). data: the data buffer.
 * length: the 8-byte header length (a BigInt or number; default the header's byte count).
 */
export function safetensorsBytes(header, data = new Uint8Array(0), { length } = {}) {
  const text = typeof header === 'object' && !(header instanceof Uint8Array) ? JSON.stringify(header) : header;
  const json = typeof text === 'string' ? new TextEncoder().encode(text) : text;
  const file = new Uint8Array(8 + json.length + data.length);
  new DataView(file.buffer).setBigUint64(0, BigInt(length ?? json.length), true);
  file.set(json, 8);
  file.set(data, 8 + json.length);
  return file;
}

/** Little-endian bytes of float32 values (the test hosts are little-endian, as file data is). */
export const f32Bytes = (values) => new Uint8Array(new Float32Array(values).buffer);

/** A header entry. */
export const entry = (dtype, shape, begin, end) => ({ dtype, shape, data_offsets: [begin, end] });

/**
 * A small valid file: F32, F16 and BF16 tensors and metadata, header padded with spaces to 8
 * bytes as the reference writer pads it, 48 bytes in all (the fuzzer's seed too).
 */
export function validFile() {
  const data = new Uint8Array(8 + 6 + 4 + 6);
  data.set(f32Bytes([1.5, -2]), 0);
  data.set([0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00], 8);   // F16 1, -2, 2^-24
  data.set([0x80, 0x3f, 0x80, 0x7f], 14);               // BF16 1, inf
  data.set([0x00, 0x7c, 0x00, 0xfc, 0x00, 0x7e], 18);   // F16 inf, -inf, NaN
  const header = JSON.stringify({
    a: entry('F32', [2], 0, 8),
    b: entry('F16', [3], 8, 14),
    c: entry('BF16', [2, 1], 14, 18),
    d: entry('F16', [3], 18, 24),
    __metadata__: { format: 'pt' },
  });
  return safetensorsBytes(header.padEnd(Math.ceil(header.length / 8) * 8, ' '), data);
}

/** A file of tests/fixtures/safetensors/ (written by tests/fixtures/make_safetensors.py). */
export const fixtureBytes = (name) => readFileSync(new URL(`../fixtures/safetensors/${name}`, import.meta.url));

/** A JSON file of tests/fixtures/safetensors/. */
export const fixtureJson = (name) => JSON.parse(fixtureBytes(name).toString('utf8'));
