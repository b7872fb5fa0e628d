// saveSafetensors(tensors, { metadata }): the bytes of a .safetensors file, loadSafetensors()'s
// inverse: float32 tensors as F32, 16-bit ones as F16 / BF16 (their bits as given). The layout is
// huggingface/safetensors' own: the header padded with spaces to a multiple of 8 bytes and the
// F32 tensors placed before the 16-bit ones, so that every F32 tensor starts 4-byte aligned and
// loadSafetensors() can view it in place. The tensors are checked as forward()'s are.
import { DTypeError, SafetensorsError, describe } from '../base/errors.js';
import { LITTLE_ENDIAN_HOST } from './half_floats.js';
import { checkOptions } from '../base/option_checks.js';
import { MAX_HEADER_BYTES } from './safetensors.js';
import { FLOAT_DATA, checkTensor, tensorDtype } from '../base/tensor_checks.js';

const FILE_DTYPES = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' };
const METADATA_KEY = '__metadata__';

/**
 * name → value pairs of a Map or a plain object, or a DTypeError naming `argument`. An object's
 * enumerable Symbol key comes as a pair of its own, for the callers' name checks to refuse: names
 * are the header's JSON keys, which must be strings (a Map's 1 and '1' would be one key there, a
 * Symbol would vanish).
 */
function pairsOf(argument, value, what) {
  let pairs;
  if (value instanceof Map) {
    pairs = [...value];
  } else if (value !== null && typeof value === 'object' && !Array.isArray(value) && !ArrayBuffer.isView(value)) {
    const symbol = Object.getOwnPropertySymbols(value).find((key) => Object.prototype.propertyIsEnumerable.call(value, key));
    pairs = symbol === undefined ? Object.entries(value) : [[symbol]];
  } else {
    throw new DTypeError(`${argument}: expected a Map or a plain object of ${what}, got ${describe(value)}`, {
      argument, expected: 'Map | object', actual: describe(value),
    });
  }
  return pairs;
}

// A lone surrogate (one half of a pair, alone) is no Unicode text: JSON.stringify escapes it, and
// loadSafetensors() refuses the escape, as serde_json does (safetensors_header.js).
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Refuses a header string (a name, a metadata value) that holds a lone surrogate. */
function checkText(argument, where, text) {
  if (!LONE_SURROGATE.test(text)) return;
  throw new SafetensorsError(`${argument}: ${where} ${JSON.stringify(text)} holds a lone surrogate (not Unicode text; `
    + 'loadSafetensors() refuses it, as the format does)', { argument, expected: 'well-formed Unicode', actual: JSON.stringify(text) });
}

/** The checked tensors, { name, dtype, shape, bytes } each, F32 ones first (each kind in the caller's order). */
function checkedTensors(tensors) {
  const views = new Map();
  const checked = pairsOf('tensors', tensors, 'name → tensor').map(([name, tensor]) => {
    if (typeof name !== 'string' || name === '' || name === METADATA_KEY) {
      throw new DTypeError(`tensors: a tensor name must be a non-empty string other than '${METADATA_KEY}', got ${describe(name)}`, {
        argument: 'tensors', expected: 'tensor name', actual: describe(name),
      });
    }
    checkText('tensors', 'the name', name);
    const t = checkTensor(`tensors[${JSON.stringify(name)}]`, tensor, { dtypes: FLOAT_DATA, views, minSize: 0 });
    return { name, dtype: FILE_DTYPES[tensorDtype(t)], shape: t.shape, data: t.data };
  });
  return [...checked.filter((t) => t.dtype === 'F32'), ...checked.filter((t) => t.dtype !== 'F32')];
}

/** The metadata as an object of strings (or undefined without any). */
function checkedMetadata(metadata) {
  if (metadata === undefined) return undefined;
  const pairs = pairsOf('metadata', metadata, 'strings');
  for (const [key, text] of pairs) {
    if (typeof key !== 'string') {
      throw new DTypeError(`metadata: expected string keys, got the key ${describe(key)}`, {
        argument: 'metadata', expected: 'string keys', actual: describe(key),
      });
    }
    if (typeof text !== 'string') {
      throw new DTypeError(`metadata[${JSON.stringify(key)}]: expected a string, got ${describe(text)}`, {
        argument: 'metadata', expected: 'string', actual: describe(text),
      });
    }
    checkText('metadata', 'the key', key);
    checkText('metadata', `[${JSON.stringify(key)}]`, text);
  }
  return headerObject(pairs);
}

// An object of `pairs` for JSON.stringify() without a prototype: a name such as '__proto__' is an
// own key like any other (on a plain object, assigning it would set the prototype instead).
const headerObject = (pairs) => Object.assign(Object.create(null), ...pairs.map(([key, value]) => ({ [key]: value })));

/** Little-endian bytes of `data` at `at` (a plain copy on little-endian hosts, which are nearly all). */
function writeData(file, at, data) {
  if (LITTLE_ENDIAN_HOST) {
    file.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), at);
    return;
  }
  const view = new DataView(file.buffer, at, data.byteLength);
  for (let i = 0; i < data.length; i++) {
    if (data instanceof Float32Array) view.setFloat32(4 * i, data[i], true);
    else view.setUint16(2 * i, data[i], true);
  }
}

/**
 * tensors: a Map or an object of name → tensor ({ data: Float32Array, shape }, or a 16-bit
 * { data: Uint16Array, shape, dtype }); options { metadata }: a Map or object of strings, the
 * header's __metadata__. Returns the file's bytes (a Uint8Array).
 */
export function saveSafetensors(tensors, options) {
  const metadata = checkedMetadata(checkOptions('saveSafetensors', options, ['metadata']).metadata);
  const entries = checkedTensors(tensors);
  let dataBytes = 0;
  const header = headerObject([...(metadata ? [[METADATA_KEY, metadata]] : []), ...entries.map((t) => {
    const entry = [t.name, { dtype: t.dtype, shape: t.shape, data_offsets: [dataBytes, dataBytes + t.data.byteLength] }];
    dataBytes += t.data.byteLength;
    return entry;
  })]);
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerBytes = Math.ceil(json.length / 8) * 8;
  if (headerBytes > MAX_HEADER_BYTES) {
    throw new SafetensorsError(`saveSafetensors: a ${headerBytes}-byte header, over the format's ${MAX_HEADER_BYTES}-byte limit (too many tensors or too much metadata)`, {
      argument: 'tensors', expected: `<= ${MAX_HEADER_BYTES}`, actual: headerBytes,
    });
  }
  const file = new Uint8Array(8 + headerBytes + dataBytes);
  new DataView(file.buffer).setUint32(0, headerBytes, true);  // the high 32 bits stay 0
  file.set(json, 8);
  file.fill(0x20, 8 + json.length, 8 + headerBytes);
  let at = 8 + headerBytes;
  for (const t of entries) {
    writeData(file, at, t.data);
    at += t.data.byteLength;
  }
  return file;
}
