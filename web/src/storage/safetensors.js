// loadSafetensors(bytes): the tensors of a .safetensors file (huggingface/safetensors' format:
// an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data buffer), checked
// as strictly as the reference implementation checks them, so that a hostile or broken file
// gives a SafetensorsError naming the problem and never a wrong tensor, a crash or a hang. Every
// size is computed in exact integer arithmetic (safe integers, overflow checked before it could
// happen). Format notes and the list of checks: docs/safetensors.md.
import { DTypeError, MemoryError, SafetensorsError, describe, formatShape } from '../base/errors.js';
import { LITTLE_ENDIAN_HOST, toFloat32Bits } from './half_floats.js';
import { checkBoolean, checkOptions } from '../base/option_checks.js';
import { parseHeader } from './safetensors_header.js';
import { byteView } from '../base/typed_arrays.js';

/** The reference implementation's limit (safetensors' MAX_HEADER_SIZE). */
export const MAX_HEADER_BYTES = 100_000_000;

/** Bytes per element of the dtypes loaded; every one becomes float32. */
const DTYPE_BYTES = Object.freeze({ __proto__: null, F32: 4, F16: 2, BF16: 2 });
const DTYPES = Object.keys(DTYPE_BYTES);
const ENTRY_KEYS = ['dtype', 'shape', 'data_offsets'];
const METADATA_KEY = '__metadata__';

function fail(argument, message, expected, actual) {
  return new SafetensorsError(`safetensors ${argument}: ${message}`, { argument, expected, actual });
}

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isCount = (v) => Number.isSafeInteger(v) && v >= 0;
const own = (object, key) => (Object.hasOwn(object, key) ? object[key] : undefined);

/** Quoted, with anything outside printable ASCII escaped (a byte-order mark shows as \ufeff). */
const printable = (text) => JSON.stringify(text).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** The 8-byte length as a BigInt: only for messages, the checks use the two 32-bit halves. */
const u64 = (low, high) => (BigInt(high) << 32n) | BigInt(low);

/** Header bytes [8, 8 + N) as text: the length checked as 64 bits, the UTF-8 fatally. */
function headerText(bytes) {
  if (bytes.length < 8) {
    throw fail('file', `${bytes.length} bytes, too short for the 8-byte header length`, '>= 8 bytes', bytes.length);
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, 8);
  const low = view.getUint32(0, true);
  const high = view.getUint32(4, true);
  if (high !== 0 || low > MAX_HEADER_BYTES) {
    throw fail('header length', `${u64(low, high)} bytes, over the ${MAX_HEADER_BYTES}-byte limit`, `<= ${MAX_HEADER_BYTES}`, u64(low, high));
  }
  if (low > bytes.length - 8) {
    throw fail('header length', `${low} bytes, past the end of the file (${bytes.length - 8} bytes follow the length)`,
      `<= ${bytes.length - 8}`, low);
  }
  let text;
  try {
    // A copy: TextDecoder refuses views of a SharedArrayBuffer. ignoreBOM keeps a byte-order mark
    // in the text, where the '{' check refuses it, instead of dropping it silently.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes.slice(8, 8 + low));
  } catch {
    throw fail('header', 'not valid UTF-8', 'UTF-8', 'invalid UTF-8');
  }
  if (text[0] !== '{') {
    throw fail('header', `expected a JSON object starting with '{', got ${text.length ? printable(text.slice(0, 20)) : 'an empty header'}`,
      'JSON object', text.slice(0, 20));
  }
  return { text, dataStart: 8 + low };
}

/** __metadata__: a JSON object of strings, as a Map in the file's order. */
function readMetadata(value, order) {
  if (!isObject(value)) throw fail(METADATA_KEY, `expected an object of strings, got ${describe(value)}`, 'object', describe(value));
  const metadata = new Map();
  for (const key of order) {
    const text = value[key];
    if (typeof text !== 'string') {
      throw fail(`${METADATA_KEY}[${JSON.stringify(key)}]`, `expected a string, got ${describe(text)}`, 'string', describe(text));
    }
    metadata.set(key, text);
  }
  return metadata;
}

/** Elements of `shape`, or a SafetensorsError when the product passes 2^53 − 1. */
function elementCount(argument, shape) {
  let elements = 1;
  for (const d of shape) {
    // Exact: a product over 2^53 − 1 rounds to at least 2^53, so the test cannot miss one.
    if (elements * d > Number.MAX_SAFE_INTEGER) {
      throw fail(argument, `shape ${formatShape(shape)} has more than 2^53 − 1 elements`, '<= 2^53 − 1 elements', shape);
    }
    elements *= d;
  }
  return elements;
}

/** One tensor's entry: { name, dtype, shape, elements, begin, end }, every field checked. */
function readEntry(name, value, order, dataBytes) {
  const at = `tensor ${JSON.stringify(name)}`;
  if (!isObject(value)) throw fail(at, `expected an object { dtype, shape, data_offsets }, got ${describe(value)}`, 'object', describe(value));
  for (const key of order) {
    if (!ENTRY_KEYS.includes(key)) throw fail(at, `unexpected key ${JSON.stringify(key)}; expected ${ENTRY_KEYS.join(', ')}`, ENTRY_KEYS, key);
  }
  for (const key of ENTRY_KEYS) {
    if (!Object.hasOwn(value, key)) throw fail(at, `missing key '${key}'`, ENTRY_KEYS, 'missing');
  }
  const { dtype, shape, data_offsets: offsets } = value;
  if (typeof dtype !== 'string' || !Object.hasOwn(DTYPE_BYTES, dtype)) {
    throw fail(`${at} dtype`, `${typeof dtype === 'string' ? JSON.stringify(dtype) : describe(dtype)} is not supported; expected ${DTYPES.join(', ')}`, DTYPES, dtype);
  }
  if (!Array.isArray(shape) || !shape.every(isCount)) {
    throw fail(`${at} shape`, `expected an array of integers in [0, 2^53 − 1], got ${JSON.stringify(shape)}`, 'integer[]', shape);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount) || offsets[0] > offsets[1]) {
    throw fail(`${at} data_offsets`, `expected [begin, end], integers with 0 <= begin <= end <= 2^53 − 1, got ${JSON.stringify(offsets)}`,
      '[begin, end]', offsets);
  }
  const elements = elementCount(`${at} shape`, shape);
  const size = DTYPE_BYTES[dtype];
  const [begin, end] = offsets;
  if (elements > Number.MAX_SAFE_INTEGER / size || end - begin !== elements * size) {
    throw fail(`${at} data_offsets`, `[${begin}, ${end}] hold ${end - begin} bytes; shape ${formatShape(shape)} of ${dtype} needs ${elements} × ${size}`,
      elements * size, end - begin);
  }
  if (end > dataBytes) {
    throw fail(`${at} data_offsets`, `[${begin}, ${end}] run past the end of the data (${dataBytes} bytes)`, `<= ${dataBytes}`, end);
  }
  return { name, dtype, shape, elements, begin, end };
}

/** The entries sorted by offsets must tile [0, dataBytes): no overlap, no hole, nothing after. */
function checkLayout(entries, dataBytes) {
  const sorted = [...entries].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let previous = null;
  let covered = 0;
  for (const e of sorted) {
    if (e.begin !== covered) {
      const other = previous && `tensor ${JSON.stringify(previous.name)} [${previous.begin}, ${previous.end}]`;
      let what;
      if (e.begin > covered) {
        what = `leaves a hole of ${e.begin - covered} bytes at [${covered}, ${e.begin}) ${previous ? `after ${other}` : 'at the start of the data'}`;
      } else {
        what = e.begin === previous.begin && e.end === previous.end ? `aliases ${other} (the same bytes)` : `overlaps ${other}`;
      }
      throw fail(`tensor ${JSON.stringify(e.name)} data_offsets`, `[${e.begin}, ${e.end}] ${what}`, covered, e.begin);
    }
    covered = e.end;
    previous = e;
  }
  if (covered !== dataBytes) {
    throw fail('data', `${dataBytes - covered} bytes after the last tensor belong to none (the tensors cover [0, ${covered}) of ${dataBytes})`,
      dataBytes, covered);
  }
}

/** A typed array of `count` elements, or the MemoryError saying what could not be allocated. */
function allocate(Type, count) {
  try {
    return new Type(count);
  } catch {
    const bytes = count * Type.BYTES_PER_ELEMENT;
    throw new MemoryError(`loadSafetensors: the copied tensors need ${bytes} bytes, more than could be allocated`, {
      argument: 'bytes', expected: 'memory for the copied tensors', actual: bytes,
    });
  }
}

/**
 * Every tensor's data, in `entries`' order: float32 values, or with `keepHalves` F16 and BF16 as
 * their 16-bit bits (Uint16Array). Data already in its final type and aligned for it is a view on
 * the file (no copy); everything else (F16, BF16 converted, unaligned data) is written into ONE
 * new buffer per type that those tensors share as subarrays: one allocation instead of one per
 * tensor (a million tiny tensors cost seconds of allocation and GC otherwise).
 */
function tensorData(file, entries, dataStart, keepHalves) {
  const kept = (e) => (keepHalves && e.dtype !== 'F32' ? 2 : 0);
  const viewed = (e) => LITTLE_ENDIAN_HOST && (kept(e) || e.dtype === 'F32')
    && (file.byteOffset + dataStart + e.begin) % (kept(e) || 4) === 0;
  const count = (half) => entries.reduce((n, e) => n + (viewed(e) || Boolean(kept(e)) !== half ? 0 : e.elements), 0);
  const bits = allocate(Uint32Array, count(false));
  const halves = allocate(Uint16Array, count(true));
  const floats = new Float32Array(bits.buffer);
  let at = 0, halfAt = 0;
  return entries.map((e) => {
    const start = file.byteOffset + dataStart + e.begin;
    if (viewed(e)) return new (kept(e) ? Uint16Array : Float32Array)(file.buffer, start, e.elements);
    if (kept(e)) {
      // Unaligned 16-bit data: its little-endian bytes, two at a time.
      for (let i = 0, p = dataStart + e.begin; i < e.elements; i++, p += 2) halves[halfAt + i] = file[p] | (file[p + 1] << 8);
      halfAt += e.elements;
      return halves.subarray(halfAt - e.elements, halfAt);
    }
    toFloat32Bits(e.dtype, file, dataStart + e.begin, e.elements, bits, at);
    at += e.elements;
    return floats.subarray(at - e.elements, at);
  });
}

/** A file's bytes as a Uint8Array (a view, no copy), or the DTypeError of `caller` (loadGguf too). */
export function fileBytes(caller, bytes) {
  const file = byteView(bytes);
  if (file === null) {
    throw new DTypeError(`${caller}: expected an ArrayBuffer or a typed array of the file's bytes, got ${describe(bytes)}`, {
      argument: 'bytes', expected: 'ArrayBuffer | ArrayBufferView', actual: describe(bytes),
    });
  }
  return file;
}

/**
 * bytes: ArrayBuffer, SharedArrayBuffer, typed array or DataView holding a .safetensors file.
 * Returns a Map name → { data: Float32Array, shape: number[], dtype: 'F32' | 'F16' | 'BF16' } in
 * the header's order, with `metadata` (a Map of the __metadata__ strings, empty without one) on
 * it. F32 tensors whose data is 4-byte aligned are views on `bytes`; the others (F16 and BF16
 * converted) share one new buffer. options { convert = true }: with convert false, F16 and BF16
 * tensors keep their 16-bit bits (data a Uint16Array, the 16-bit tensors loadStateDict() and
 * forward() take), views on `bytes` where 2-byte aligned.
 */
export function loadSafetensors(bytes, options) {
  const convert = checkBoolean('convert', checkOptions('loadSafetensors', options, ['convert']).convert, true);
  const file = fileBytes('loadSafetensors', bytes);
  const { text, dataStart } = headerText(file);
  const { value: header, order, entryOrder } = parseHeader(text);
  const dataBytes = file.length - dataStart;
  let metadata = new Map();
  const entries = [];
  for (const name of order) {
    const value = own(header, name);
    if (name === METADATA_KEY) metadata = readMetadata(value, entryOrder.get(name) ?? []);
    else entries.push(readEntry(name, value, entryOrder.get(name) ?? [], dataBytes));
  }
  checkLayout(entries, dataBytes);
  const data = tensorData(file, entries, dataStart, !convert);
  const tensors = new Map(entries.map((e, i) => [e.name, { data: data[i], shape: e.shape, dtype: e.dtype }]));
  Object.defineProperty(tensors, 'metadata', { value: metadata, enumerable: true });
  return tensors;
}
