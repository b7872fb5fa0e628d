// Mutation fuzzer of loadGguf(): every mutated file (gguf_mutations.mjs) must either load into
// tensors that agree with an independent reading of the same bytes (the header walked by
// gguf_mutations.mjs' fields(), the values decoded here by llama.cpp's rules), or throw one of the
// package's typed errors; never another exception, never a file slower than SLOW_MS, never a hang
// (the files run in a worker, watched from here: tests/fuzz/fuzz_driver.mjs).
//   node tests/fuzz/gguf_fuzz.mjs [files = 1000000] [--seconds S] [--seed N]
//   node tests/fuzz/gguf_fuzz.mjs --replay I [--seed N]    (iteration I again, in this thread)
// A finding's file is written to build/fuzz/gguf/ (ignored by git) and the run exits 1.
// Each file is loaded with { dequantize: true } (every decodable type, as float32) and, when that
// succeeds, as stored too (which may refuse a type that has no stored form: a GgufError naming it).
// A file loaded as stored goes on through what loadStateDict() and fromGguf() make of it: each
// Q8_0 / Q4_0 matrix as a quantised entry (storage/quantised_tensors.js) must give the dequantised
// values bit for bit or a typed error, and fromGguf's mapping of layer 0 must give create() options
// that resolve, or a typed error.
import { loadGguf, GgufError, WebAttentionError } from '#webattention';
import { quantisedEntry, dequantisedValues } from '../../web/src/storage/quantised_tensors.js';
import { QUANTISED_SOURCES } from '../../web/src/storage/quantised_entries.js';
import { attentionOptionsFromGguf } from '../../web/src/checks/gguf_config.js';
import { resolveMhaConfig } from '../internals.mjs';
import { halfValue } from '../fixtures/make_gguf.mjs';
import { fuzz } from './fuzz_driver.mjs';
import { fields, mutatedFile } from './gguf_mutations.mjs';

// id → [name, elements per block, bytes per block, stored form]: ggml.c's type_traits.
const TYPES = new Map([[0, ['F32', 1, 4, 'f32']], [1, ['F16', 1, 2, 'float16']], [30, ['BF16', 1, 2, 'bfloat16']],
  [2, ['Q4_0', 32, 18, 'q4_0']], [8, ['Q8_0', 32, 34, 'q8_0']], [3, ['Q4_1', 32, 20]], [6, ['Q5_0', 32, 22]], [7, ['Q5_1', 32, 24]]]);

const bf16Value = (h) => new Float32Array(new Uint32Array([h << 16 >>> 0]).buffer)[0];

/** Element `i` of a tensor of `type` (blocks of `size` bytes) whose bytes start at `p`: llama.cpp's dequantize_row_* in float64, rounded once. */
function referenceValue(view, type, size, p, i) {
  if (type === 'F32') return view.getFloat32(p + 4 * i, true);
  if (type === 'F16') return halfValue(view.getUint16(p + 2 * i, true));
  if (type === 'BF16') return bf16Value(view.getUint16(p + 2 * i, true));
  const block = p + Math.floor(i / 32) * size, j = i % 32;
  const d = halfValue(view.getUint16(block, true));
  if (type === 'Q8_0') return view.getInt8(block + 2 + j) * d;
  const withMin = type.endsWith('_1');
  const m = withMin ? halfValue(view.getUint16(block + 2, true)) : 0;
  const five = type.startsWith('Q5');
  const qs = block + (withMin ? 4 : 2) + (five ? 4 : 0);
  const nibble = (view.getUint8(qs + (j % 16)) >> (j < 16 ? 0 : 4)) & 15;
  const high = five ? (view.getUint32(qs - 4, true) >>> j) & 1 : 0;
  const code = nibble + 16 * high - (withMin ? 0 : five ? 16 : 8);
  return Math.fround(withMin ? code * d + m : code * d);
}

/** The tensor infos of a file the loader accepted, walked independently: [{ name, ne, id, offset }]. */
function infosOf(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const list = fields(bytes);
  const infos = [];
  list.forEach(([at, , kind], k) => {
    if (kind !== 'ndims') return;
    const [nameAt] = list[k - 1];
    const name = new TextDecoder().decode(bytes.subarray(nameAt + 8, at));
    const n = view.getUint32(at, true);
    const ne = Array.from({ length: n }, (_, d) => Number(view.getBigUint64(at + 4 + 8 * d, true)));
    const id = view.getUint32(at + 4 + 8 * n, true);
    infos.push({ name, ne, id, offset: Number(view.getBigUint64(at + 8 + 8 * n, true)) });
  });
  return { infos, end: list.end };
}

/** −0 printed as such: a wrong sign of zero is a finding too. */
const show = (v) => (Object.is(v, -0) ? '-0' : String(v));
const sameValue = (a, b) => Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b));
const bytesOf = (data) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** An accepted file against its own bytes: returns a problem or null. */
function disagreement(bytes, dequantized) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { infos, end } = infosOf(bytes);
  const dataStart = Math.ceil(end / dequantized.alignment) * dequantized.alignment;
  if (infos.length !== dequantized.size) return `${dequantized.size} tensors, the header has ${infos.length}`;
  let stored = null;
  try {
    stored = loadGguf(bytes);
  } catch (e) {
    if (!(e instanceof GgufError) || !/ is not kept as stored/.test(e.message)) return `as stored: ${e?.name}: ${e?.message}`;
  }
  const ranges = [];
  for (const [i, { name, ne, id, offset }] of infos.entries()) {
    const [type, block, size, kept] = TYPES.get(id) ?? [];
    const t = dequantized.get(name);
    const count = ne.reduce((a, b) => a * b, 1);
    if ([...dequantized.keys()][i] !== name || !type || dequantized.types.get(name) !== type) return `tensor ${i} ${JSON.stringify(name)} type ${id}`;
    if (JSON.stringify(t.shape) !== JSON.stringify([...ne].reverse()) || !(t.data instanceof Float32Array) || t.data.length !== count) {
      return `tensor ${JSON.stringify(name)}: shape ${JSON.stringify(t.shape)}, ${t.data?.length} values; ne ${JSON.stringify(ne)}`;
    }
    const begin = dataStart + offset, byteLength = (count / block) * size;
    if (begin + byteLength > bytes.length) return `tensor ${JSON.stringify(name)} [${begin}, ${begin + byteLength}) past the end (${bytes.length})`;
    for (const [a, b] of ranges) if (begin < b && a < begin + byteLength) return `tensor ${JSON.stringify(name)} overlaps [${a}, ${b})`;
    ranges.push([begin, begin + byteLength]);
    for (let k = 0; k < count; k++) {
      const want = referenceValue(view, type, size, begin, k);
      if (!sameValue(t.data[k], want)) return `tensor ${JSON.stringify(name)}[${k}]: ${show(t.data[k])}, the bytes say ${show(want)}`;
    }
    const raw = stored && kept ? bytesOf(stored.get(name).data) : null;
    if (stored && (!raw || raw.length !== byteLength || !raw.every((b, k) => b === bytes[begin + k]))) {
      return `tensor ${JSON.stringify(name)} as stored: not the file's ${byteLength} bytes`;
    }
    const problem = stored && quantisedDisagreement(name, stored.get(name), t.data);
    if (problem) return problem;
  }
  return stored ? mappingProblem(stored) : null;
}

/** A stored Q8_0 / Q4_0 matrix as a quantised entry against its dequantised values: a problem or null. */
function quantisedDisagreement(name, tensor, values) {
  if (!(tensor.dtype in QUANTISED_SOURCES) || tensor.shape.length !== 2) return null;
  let entry;
  try {
    entry = quantisedEntry(name, tensor, tensor.shape, QUANTISED_SOURCES[tensor.dtype]);
  } catch (e) {
    // Only a non-finite scale is refused: the loader checked the sizes already.
    return e instanceof WebAttentionError && /scales must be finite/.test(e.message) ? null : `${name} as a quantised entry: ${e?.name}: ${e?.message}`;
  }
  const got = dequantisedValues(entry, tensor.shape[1]);
  const k = got.findIndex((v, i) => !sameValue(v, values[i]));
  return k < 0 ? null : `${name} as a quantised entry [${k}]: ${show(got[k])}, dequantised ${show(values[k])}`;
}

/** fromGguf's mapping of layer 0: options that resolve, or a typed error. */
function mappingProblem(file) {
  try {
    resolveMhaConfig(attentionOptionsFromGguf(file, { layer: 0 }).options);
  } catch (e) {
    if (!(e instanceof WebAttentionError)) return `fromGguf mapping: ${e?.name}: ${e?.message}`;
  }
  return null;
}

await fuzz({
  name: 'gguf', extension: 'gguf', url: new URL(import.meta.url), mutatedFile, load: (bytes) => loadGguf(bytes, { dequantize: true }), disagreement,
});
