// loadGguf(bytes): the tensors and metadata of a GGUF file (llama.cpp's format, versions 2 and 3,
// little-endian), checked strictly, as loadSafetensors() checks its files: a hostile or broken
// file gives a GgufError naming the problem, never a wrong tensor, a crash, a hang or a read past
// the end. Every count and length is checked against the bytes left before anything is allocated
// for it (a uint64 count of 2^60 strings costs nothing), sizes are exact integers. The type table
// and the dequantisers: gguf_types.js. Format notes and the list of checks: docs/gguf.md.
import { GgufError, MemoryError, formatShape } from '../base/errors.js';
import { DEQUANTIZED_TYPES, GGML_TYPES } from './gguf_types.js';
import { LITTLE_ENDIAN_HOST, toFloat32Bits } from './half_floats.js';
import { checkBoolean, checkOptions } from '../base/option_checks.js';
import { fileBytes } from './safetensors.js';

const MAGIC = 0x46554747;          // 'GGUF' read as a little-endian uint32
const DEFAULT_ALIGNMENT = 32;      // llama.cpp's GGUF_DEFAULT_ALIGNMENT
const MAX_DIMS = 4;                // GGML_MAX_DIMS
const MAX_NAME_BYTES = 63;         // GGML_MAX_NAME 64, with its terminating zero
// Arrays of arrays recurse; a file of nested array headers (12 bytes a level) must not exhaust
// the stack. Real files nest at most once.
const MAX_ARRAY_DEPTH = 16;
const ENCODER = new TextEncoder();
const VALUE_TYPES = ['UINT8', 'INT8', 'UINT16', 'INT16', 'UINT32', 'INT32', 'FLOAT32', 'BOOL', 'STRING', 'ARRAY', 'UINT64', 'INT64', 'FLOAT64'];
// Bytes of one value of each type, at least (a string is its 8-byte length, an array its 12-byte
// header): what an array count is checked against before a single element is read.
const MIN_BYTES = [1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8];

function fail(argument, message, expected, actual) {
  return new GgufError(`gguf ${argument}: ${message}`, { argument, expected, actual });
}

/** Reads the file front to back; every read is checked against the end first. */
class Reader {
  constructor(bytes) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.at = 0;
    // A copy per string: TextDecoder refuses views of a SharedArrayBuffer.
    this.decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
  }

  get left() {
    return this.bytes.length - this.at;
  }

  need(argument, n) {
    if (n > this.left) {
      throw fail(argument, `needs ${n} bytes at offset ${this.at}, past the end of the file (${this.left} left)`, `<= ${this.left}`, n);
    }
  }

  scalar(argument, type) {
    this.need(argument, MIN_BYTES[type]);
    const v = this.view, at = this.at;
    this.at += MIN_BYTES[type];
    switch (type) {
      case 0: return v.getUint8(at);
      case 1: return v.getInt8(at);
      case 2: return v.getUint16(at, true);
      case 3: return v.getInt16(at, true);
      case 4: return v.getUint32(at, true);
      case 5: return v.getInt32(at, true);
      case 6: return v.getFloat32(at, true);
      case 7: return this.bool(argument, v.getUint8(at));
      case 10: return v.getBigUint64(at, true);
      case 11: return v.getBigInt64(at, true);
      default: return v.getFloat64(at, true);
    }
  }

  bool(argument, byte) {
    if (byte > 1) throw fail(argument, `a bool is 0 or 1, got ${byte}`, '0 | 1', byte);
    return byte === 1;
  }

  u32(argument) {
    return this.scalar(argument, 4);
  }

  /** A uint64 count or size, as a number: larger than the file is refused by `limit` first. */
  count(argument, limit, what) {
    const n = this.scalar(argument, 10);
    // A limit below 0 (fewer bytes left than the smallest item) allows 0 items, not fewer.
    limit = Math.max(0, limit);
    if (n > BigInt(limit)) throw fail(argument, `${n} ${what}, more than the ${limit} the rest of the file can hold`, `<= ${limit}`, n);
    return Number(n);
  }

  string(argument) {
    const length = this.count(`${argument} length`, this.left - 8, 'bytes');
    const raw = this.bytes.slice(this.at, this.at + length);
    this.at += length;
    try {
      return this.decoder.decode(raw);
    } catch {
      throw fail(argument, `${length} bytes at offset ${this.at - length} are not valid UTF-8`, 'UTF-8', 'invalid UTF-8');
    }
  }

  /** A metadata value of `type` (0–12); arrays as arrays, uint64 / int64 as BigInt. */
  value(argument, type, depth = 0) {
    if (type === 8) return this.string(argument);
    if (type !== 9) return this.scalar(argument, type);
    if (depth === MAX_ARRAY_DEPTH) {
      throw fail(argument, `arrays nested deeper than ${MAX_ARRAY_DEPTH} levels`, `<= ${MAX_ARRAY_DEPTH} levels`, 'deeper');
    }
    const elementType = this.valueType(`${argument} element type`);
    const n = this.count(`${argument} count`, Math.floor((this.left - 8) / MIN_BYTES[elementType]), `${VALUE_TYPES[elementType]} elements`);
    const array = new Array(n);
    for (let i = 0; i < n; i++) array[i] = this.value(`${argument}[${i}]`, elementType, depth + 1);
    return array;
  }

  valueType(argument) {
    const type = this.u32(argument);
    if (type >= VALUE_TYPES.length) {
      throw fail(argument, `${type} is not a GGUF value type (0–12: ${VALUE_TYPES.join(', ')})`, VALUE_TYPES, type);
    }
    return type;
  }
}

/** Magic, version, tensor and metadata counts. */
function readPreamble(r) {
  if (r.left < 4 || r.view.getUint32(0, true) !== MAGIC) {
    const got = [...r.bytes.subarray(0, 4)].map((b) => b.toString(16).padStart(2, '0')).join(' ');
    throw fail('magic', `expected the bytes 'GGUF' (47 47 55 46), got ${got || 'an empty file'}`, 'GGUF', got);
  }
  r.at = 4;
  const version = r.u32('version');
  if (version !== 2 && version !== 3) {
    const hint = version === 1 ? ' (version 1 has 32-bit counts; convert the file with a newer llama.cpp)'
      : version >= 0x01000000 ? ' (a big-endian file? only little-endian GGUF is read)' : '';
    throw fail('version', `${version} is not supported${hint}; expected 2 or 3`, [2, 3], version);
  }
  // A tensor info takes at least 8 + 4 + 8 + 4 + 8 bytes, a key-value pair 8 + 4 + 1.
  const tensorCount = r.count('tensor count', Math.floor((r.left - 16) / 32), 'tensors');
  const kvCount = r.count('metadata count', Math.floor(r.left / 13), 'key-value pairs');
  return { version, tensorCount, kvCount };
}

/** The key-value pairs as a Map in file order, duplicate keys refused; and general.alignment. */
function readMetadata(r, kvCount) {
  const metadata = new Map();
  let alignment = DEFAULT_ALIGNMENT;
  for (let i = 0; i < kvCount; i++) {
    const key = r.string(`metadata key ${i}`);
    const argument = `metadata ${JSON.stringify(key)}`;
    if (metadata.has(key)) throw fail(argument, 'duplicate key', 'unique keys', key);
    const type = r.valueType(`${argument} type`);
    metadata.set(key, r.value(argument, type));
    if (key === 'general.alignment') alignment = checkAlignment(type, metadata.get(key));
  }
  return { metadata, alignment };
}

/** general.alignment: a UINT32 (the only type llama.cpp reads it as), a power of two. */
function checkAlignment(type, a) {
  const argument = 'metadata "general.alignment"';
  if (type !== 4) throw fail(argument, `expected a UINT32, got a ${VALUE_TYPES[type]}`, 'UINT32', VALUE_TYPES[type]);
  if (a === 0 || (a & (a - 1)) !== 0) throw fail(argument, `expected a power of two, got ${a}`, 'a power of two', a);
  return a;
}

/** One tensor info: { name, shape (row-major), type, offset, elements, byteLength }. */
function readTensorInfo(r, i) {
  const name = r.string(`tensor ${i} name`);
  const at = `tensor ${JSON.stringify(name)}`;
  const nameBytes = ENCODER.encode(name).length;
  if (nameBytes > MAX_NAME_BYTES) throw fail(`${at} name`, `${nameBytes} bytes, over llama.cpp's ${MAX_NAME_BYTES}`, `<= ${MAX_NAME_BYTES}`, nameBytes);
  const nDims = r.u32(`${at} n_dims`);
  if (nDims < 1 || nDims > MAX_DIMS) throw fail(`${at} n_dims`, `${nDims}; expected 1 to ${MAX_DIMS}`, `1..${MAX_DIMS}`, nDims);
  const ne = [];
  let elements = 1;
  for (let d = 0; d < nDims; d++) {
    const n = r.scalar(`${at} dims`, 10);
    // Exact: a product over 2^53 − 1 rounds to at least 2^53, so the test cannot miss one.
    if (n < 1n || n > BigInt(Number.MAX_SAFE_INTEGER) || elements * Number(n) > Number.MAX_SAFE_INTEGER) {
      throw fail(`${at} dims`, `ne[${d}] = ${n}: dims must be positive and their product at most 2^53 − 1`, 'positive, product <= 2^53 − 1', n);
    }
    ne.push(Number(n));
    elements *= Number(n);
  }
  const id = r.u32(`${at} type`);
  const type = GGML_TYPES.get(id);
  if (!type) throw fail(`${at} type`, `${id} is not a GGML type id`, [...GGML_TYPES.keys()], id);
  if (ne[0] % type.block !== 0) {
    throw fail(`${at} dims`, `ne[0] = ${ne[0]} is not a multiple of ${type.name}'s block of ${type.block}`, `a multiple of ${type.block}`, ne[0]);
  }
  const offset = r.count(`${at} offset`, Number.MAX_SAFE_INTEGER, 'bytes');
  // GGUF lists ne innermost first (ne[0] is the row length); shapes here are row-major.
  return { name, shape: ne.reverse(), type, offset, elements, byteLength: (elements / type.block) * type.bytes };
}

/** Every tensor's bytes: aligned, inside the file, no two overlapping. */
function checkLayout(infos, dataStart, fileBytes, alignment) {
  const dataBytes = fileBytes - dataStart;
  for (const t of infos) {
    const at = `tensor ${JSON.stringify(t.name)} offset`;
    if (t.offset % alignment !== 0) throw fail(at, `${t.offset} is not a multiple of the alignment ${alignment}`, `a multiple of ${alignment}`, t.offset);
    if (t.byteLength > dataBytes - t.offset) {
      throw fail(at, `[${t.offset}, ${t.offset + t.byteLength}) (${formatShape(t.shape)} of ${t.type.name}) runs past the end of the data (${dataBytes} bytes)`,
        `<= ${dataBytes}`, t.offset + t.byteLength);
    }
  }
  const sorted = [...infos].sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < sorted.length; i++) {
    const a = sorted[i - 1], b = sorted[i];
    if (b.offset < a.offset + a.byteLength) {
      throw fail(`tensor ${JSON.stringify(b.name)} offset`, `[${b.offset}, ${b.offset + b.byteLength}) overlaps tensor ${JSON.stringify(a.name)} `
        + `[${a.offset}, ${a.offset + a.byteLength})`, `>= ${a.offset + a.byteLength}`, b.offset);
    }
  }
}

/** A typed array of `count` elements, or the MemoryError saying what could not be allocated. */
function allocate(Type, count, name) {
  try {
    return new Type(count);
  } catch {
    throw new MemoryError(`loadGguf: tensor ${JSON.stringify(name)} needs ${count * Type.BYTES_PER_ELEMENT} bytes, more than could be allocated`, {
      argument: 'bytes', expected: 'memory for the tensors', actual: count * Type.BYTES_PER_ELEMENT,
    });
  }
}

/** One tensor as returned: stored form where `kept` allows it, float32 when dequantised. */
function tensorOf(file, t, start, dequantize) {
  const { kept, name: typeName, block } = t.type;
  if (dequantize || kept === 'float32') {
    if (!t.type.dequantize) {
      throw fail(`tensor ${JSON.stringify(t.name)} type`, `${typeName} is not supported; the types read are ${DEQUANTIZED_TYPES.join(', ')}`,
        DEQUANTIZED_TYPES, typeName);
    }
    if (kept === 'float32' && LITTLE_ENDIAN_HOST && (file.byteOffset + start) % 4 === 0) {
      return { data: new Float32Array(file.buffer, file.byteOffset + start, t.elements), shape: t.shape };
    }
    const data = allocate(Float32Array, t.elements, t.name);
    if (kept === 'float32') toFloat32Bits('F32', file, start, t.elements, new Uint32Array(data.buffer), 0);
    else t.type.dequantize(file, start, t.elements / block, data);
    return { data, shape: t.shape };
  }
  if (kept === 'q8_0' || kept === 'q4_0') {
    return { dtype: kept, data: new Uint8Array(file.buffer, file.byteOffset + start, t.byteLength), shape: t.shape };
  }
  if (kept === 'float16' || kept === 'bfloat16') {
    if (LITTLE_ENDIAN_HOST && (file.byteOffset + start) % 2 === 0) {
      return { data: new Uint16Array(file.buffer, file.byteOffset + start, t.elements), shape: t.shape, dtype: kept };
    }
    const data = allocate(Uint16Array, t.elements, t.name);
    for (let i = 0, p = start; i < t.elements; i++, p += 2) data[i] = file[p] | (file[p + 1] << 8);
    return { data, shape: t.shape, dtype: kept };
  }
  const hint = t.type.dequantize ? '; pass { dequantize: true } for float32' : `; the types read are ${DEQUANTIZED_TYPES.join(', ')}`;
  throw fail(`tensor ${JSON.stringify(t.name)} type`, `${typeName} is not kept as stored${hint}`,
    t.type.dequantize ? '{ dequantize: true }' : DEQUANTIZED_TYPES, typeName);
}

/**
 * bytes: ArrayBuffer, SharedArrayBuffer, typed array or DataView holding a GGUF file (versions 2
 * and 3, little-endian). Returns a GgufFile: a Map name → tensor in the file's order, with
 * `metadata` (a Map key → value in file order: numbers, booleans, strings, uint64 / int64 as
 * BigInt, arrays as arrays), `types` (a Map name → the GGML type name, 'Q4_1'...), `version` and
 * `alignment` on it. Shapes are row-major, as PyTorch's: GGUF's ne (innermost first) reversed, so
 * a matrix of rows of ne[0] is [ne[1], ne[0]]. Tensors: F32 { data: Float32Array, shape }; F16 /
 * BF16 { data: Uint16Array, shape, dtype: 'float16' | 'bfloat16' }; Q8_0 / Q4_0 { dtype: 'q8_0' |
 * 'q4_0', data: Uint8Array (the blocks as stored), shape }. Views on `bytes` where aligned, copies
 * otherwise. Any other type is a GgufError naming the tensor and its type, unless options {
 * dequantize: true }, which makes every tensor of a type with a dequantiser (F32, F16, BF16, Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0) a float32 { data, shape } by llama.cpp's dequantisation.
 */
export function loadGguf(bytes, options) {
  const dequantize = checkBoolean('dequantize', checkOptions('loadGguf', options, ['dequantize']).dequantize, false);
  const file = fileBytes('loadGguf', bytes);
  const r = new Reader(file);
  const { version, tensorCount, kvCount } = readPreamble(r);
  const { metadata, alignment } = readMetadata(r, kvCount);
  const infos = [];
  const names = new Set();
  for (let i = 0; i < tensorCount; i++) {
    const info = readTensorInfo(r, i);
    if (names.has(info.name)) throw fail(`tensor ${JSON.stringify(info.name)}`, 'duplicate name', 'unique names', info.name);
    names.add(info.name);
    infos.push(info);
  }
  // The data section starts at the header's end rounded up to the alignment.
  const dataStart = Math.ceil(r.at / alignment) * alignment;
  if (infos.length > 0 && dataStart > file.length) {
    throw fail('data', `starts at ${dataStart} (the header's end ${r.at} aligned to ${alignment}), past the end of the file (${file.length} bytes)`,
      `<= ${file.length}`, dataStart);
  }
  checkLayout(infos, dataStart, file.length, alignment);
  const tensors = new Map(infos.map((t) => [t.name, tensorOf(file, t, dataStart + t.offset, dequantize)]));
  for (const [key, value] of Object.entries({ metadata, types: new Map(infos.map((t) => [t.name, t.type.name])), version, alignment })) {
    Object.defineProperty(tensors, key, { value, enumerable: true });
  }
  return tensors;
}
