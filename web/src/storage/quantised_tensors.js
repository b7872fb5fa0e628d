// Weight tensors quantised already, taken as stored by loadStateDict() (docs/attention-math/storage.md
// §11): GGUF's Q4_0 and Q8_0 blocks (loadGguf()'s { dtype: 'q4_0' | 'q8_0', data, shape }) and ORT
// MatMulNBits' 4-bit initializers ({ dtype: 'int4', data, scales, zeroPoints?, blockSize, shape }).
// Each becomes one form, a quantised entry, without loss: { dtype: 'int8' | 'int4', data (one
// code per weight, row-major: an Int8Array, or a Uint8Array of 0-15), scales (a Float32Array, one
// per block of 32 along a row (storage_types.js's Q8_BLOCK, Q4_BLOCK): [rows][ceil(cols / 32)]), zeroPoints (int4: a Uint8Array laid
// out as the scales) }, which the core packs as it is (an f16 scale widens to f32 exactly; a
// MatMulNBits block of 64, 128 or 256 is 2, 4 or 8 blocks of 32 with its scale and zero point).
// The module then computes (code − zero point) · scale for each weight. Reached through
// base/lazy_modules.js (lazy_exports.js): only loads with quantised tensors run it; what every load
// asks of its entries is quantised_entries.js.
import { DTypeError, StateDictError, describe, formatShape } from '../base/errors.js';
import { typedArrayType } from '../base/typed_arrays.js';
import { GGML_TYPES, f16Value } from './gguf_types.js';
import { widenHalf } from './half_floats.js';
import { MATMUL_NBITS_BLOCKS, Q4_BLOCK, Q8_BLOCK } from './storage_types.js';
import { blocksPerRow } from './q8_0.js';
import { QUANTISED_SOURCES, markQuantised as made } from './quantised_entries.js';

const ggml = (name) => [...GGML_TYPES.values()].find((t) => t.name === name);
const Q4_0 = ggml('Q4_0');
const Q8_0 = ggml('Q8_0');
/** Values per scale along a row, for each quantised weightsDtype. */
const BLOCK = { int8: Q8_BLOCK, int4: Q4_BLOCK };

const refuse = (name, what, expected, actual) => new StateDictError(`stateDict['${name}']: ${what}`, { argument: name, expected, actual });

function requireArray(name, field, value, type) {
  if (typedArrayType(value) !== type) {
    throw new DTypeError(`stateDict['${name}'].${field}: expected a ${type}, got ${describe(value)}`, {
      argument: `stateDict['${name}'].${field}`, expected: type, actual: describe(value),
    });
  }
  return value;
}

function requireLength(name, field, array, length, why) {
  if (array.length !== length) throw refuse(name, `${field} holds ${array.length} ${why.unit}, expected ${length} (${why.text})`, length, array.length);
}

/** The scales, finite: a NaN or infinite scale makes its whole block meaningless. */
function requireFiniteScales(name, scales, perRow) {
  const i = scales.findIndex((s) => !Number.isFinite(s));
  if (i < 0) return scales;
  const [row, block] = [Math.floor(i / perRow), i % perRow];
  throw refuse(name, `scales must be finite, got ${scales[i]} at block ${block} of row ${row}`, 'finite scales', { row, block, value: scales[i] });
}

/** GGUF Q4_0 / Q8_0 blocks of a [rows, cols] weight: 32 codes and an f16 d each, along the rows. */
function fromGguf(name, { dtype, data }, rows, cols) {
  const type = dtype === 'q4_0' ? Q4_0 : Q8_0;
  requireArray(name, 'data', data, 'Uint8Array');
  if (cols % type.block !== 0) {
    throw refuse(name, `a ${dtype} row holds whole blocks of ${type.block}, got ${cols} columns`, `a multiple of ${type.block}`, cols);
  }
  const blocks = (rows * cols) / type.block;
  requireLength(name, 'data', data, blocks * type.bytes, { unit: 'bytes', text: `${blocks} blocks of ${type.bytes} bytes for ${formatShape([rows, cols])}` });
  const scales = new Float32Array(blocks);
  const codes = dtype === 'q4_0' ? new Uint8Array(rows * cols) : new Int8Array(rows * cols);
  // GGUF's blocks are the module's (32 values): one scale each, as they lie.
  for (let b = 0, p = 0, o = 0; b < blocks; b++, p += type.bytes, o += type.block) {
    scales[b] = f16Value(data[p] | (data[p + 1] << 8));
    if (dtype === 'q8_0') {
      codes.set(new Int8Array(data.buffer, data.byteOffset + p + 2, type.block), o);
      continue;
    }
    for (let j = 0; j < 16; j++) {
      const q = data[p + 2 + j];
      codes[o + j] = q & 0x0f;
      codes[o + j + 16] = q >> 4;
    }
  }
  requireFiniteScales(name, scales, cols / type.block);
  const entry = { dtype: QUANTISED_SOURCES[dtype], data: codes, scales };
  return made(dtype === 'q4_0' ? { ...entry, zeroPoints: new Uint8Array(blocks).fill(8) } : entry);
}

/** MatMulNBits' scales (Float32Array, or float16 bits), widened exactly. */
function matMulScales(name, scales) {
  if (typedArrayType(scales) === 'Float32Array') return scales;
  if (scales && typeof scales === 'object' && scales.dtype === 'float16' && typedArrayType(scales.data) === 'Uint16Array') {
    return widenHalf('float16', scales.data);
  }
  throw new DTypeError(`stateDict['${name}'].scales: expected a Float32Array or { data: Uint16Array, dtype: 'float16' }, got ${describe(scales)}`, {
    argument: `stateDict['${name}'].scales`, expected: 'Float32Array | { data: Uint16Array, dtype: float16 }', actual: describe(scales),
  });
}

/**
 * ORT MatMulNBits (bits 4) initializers of an [N, K] weight: B [N][ceil(K / blockSize)][blockSize /
 * 2] bytes, codes low nibble first along K; scales [N][blocks]; zero points [N][ceil(blocks / 2)]
 * bytes, low nibble first (default 8). A block past K's end is padding, ignored.
 */
function fromMatMulNBits(name, value, N, K) {
  const { blockSize } = value;
  if (!MATMUL_NBITS_BLOCKS.includes(blockSize)) {
    throw refuse(name, `blockSize: expected one of ${MATMUL_NBITS_BLOCKS.join(', ')}, got ${typeof blockSize === 'number' ? blockSize : describe(blockSize)}`, MATMUL_NBITS_BLOCKS, blockSize);
  }
  const data = requireArray(name, 'data', value.data, 'Uint8Array');
  const blocks = Math.ceil(K / blockSize), blob = blockSize / 2;
  requireLength(name, 'data', data, N * blocks * blob, { unit: 'bytes', text: `[N ${N}][blocks ${blocks}][${blob}] for ${formatShape([N, K])}, blockSize ${blockSize}` });
  const scales = matMulScales(name, value.scales);
  requireLength(name, 'scales', scales, N * blocks, { unit: 'scales', text: `[N ${N}][blocks ${blocks}]` });
  let zeros = null;
  if (value.zeroPoints !== undefined) {
    zeros = requireArray(name, 'zeroPoints', value.zeroPoints, 'Uint8Array');
    requireLength(name, 'zeroPoints', zeros, N * Math.ceil(blocks / 2), { unit: 'bytes', text: `[N ${N}][ceil(blocks / 2) ${Math.ceil(blocks / 2)}], two 4-bit zero points a byte` });
  }
  requireFiniteScales(name, scales, blocks);
  const perRow = blocksPerRow(K, Q4_BLOCK), per = blockSize / Q4_BLOCK;
  const codes = new Uint8Array(N * K);
  const out = { dtype: 'int4', data: codes, scales: new Float32Array(N * perRow), zeroPoints: new Uint8Array(N * perRow) };
  for (let n = 0; n < N; n++) {
    for (let k = 0; k < K; k++) {
      const byte = data[(n * blocks + Math.floor(k / blockSize)) * blob + Math.floor((k % blockSize) / 2)];
      codes[n * K + k] = k % 2 ? byte >> 4 : byte & 0x0f;
    }
    for (let b = 0; b < perRow; b++) {
      const from = Math.floor(b / per);
      const z = zeros ? zeros[n * Math.ceil(blocks / 2) + (from >> 1)] : 0x88;
      out.scales[n * perRow + b] = scales[n * blocks + from];
      out.zeroPoints[n * perRow + b] = from % 2 ? z >> 4 : z & 0x0f;
    }
  }
  return made(out);
}

/**
 * A quantised tensor (isQuantisedTensor()) for the weight matrix entry `name` of shape [rows,
 * cols] in a module of `weightsDtype`, as a quantised entry { dtype, data, scales, zeroPoints? }.
 * DTypeError where the module stores another weightsDtype (re-quantising would change the values),
 * StateDictError for a vector entry, a shape other than the entry's, block counts or lengths that
 * do not match the shape, or a non-finite scale.
 */
export function quantisedEntry(name, value, shape, weightsDtype) {
  const needs = QUANTISED_SOURCES[value.dtype];
  if (needs !== weightsDtype) {
    throw new DTypeError(`stateDict['${name}']: ${value.dtype} blocks load as stored into a module with weightsDtype '${needs}' `
      + `(create({ weightsDtype: '${needs}' })), this one stores ${weightsDtype}; dequantise it (loadGguf(bytes, { dequantize: true })) for other storage`, {
      argument: `stateDict['${name}']`, expected: needs, actual: weightsDtype,
    });
  }
  if (shape.length !== 2) throw refuse(name, `${value.dtype} blocks load into weight matrices only, not ${formatShape(shape)} vectors`, 'a float tensor', value.dtype);
  const given = Array.isArray(value.shape) ? value.shape : [];
  if (given.length !== 2 || given[0] !== shape[0] || given[1] !== shape[1]) {
    throw refuse(name, `expected shape ${formatShape(shape)}, got ${Array.isArray(value.shape) ? formatShape(value.shape) : describe(value.shape)}`, shape, value.shape);
  }
  return value.dtype === 'int4' ? fromMatMulNBits(name, value, shape[0], shape[1]) : fromGguf(name, value, shape[0], shape[1]);
}

/** A quantised entry's weights as float32 values, (code − zero point) · scale: a new Float32Array. */
export function dequantisedValues({ dtype, data, scales, zeroPoints }, cols) {
  const perRow = blocksPerRow(cols, BLOCK[dtype]);
  const out = new Float32Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const block = Math.floor(i / cols) * perRow + Math.floor((i % cols) / BLOCK[dtype]);
    out[i] = (data[i] - (zeroPoints ? zeroPoints[block] : 0)) * scales[block];
  }
  return out;
}

/** Rows [row0, row0 + rows) of a quantised entry of `cols` columns (views). */
export function quantisedRows(entry, row0, rows, cols) {
  const perRow = blocksPerRow(cols, BLOCK[entry.dtype]);
  const part = { dtype: entry.dtype, data: entry.data.subarray(row0 * cols, (row0 + rows) * cols), scales: entry.scales.subarray(row0 * perRow, (row0 + rows) * perRow) };
  return made(entry.zeroPoints ? { ...part, zeroPoints: entry.zeroPoints.subarray(row0 * perRow, (row0 + rows) * perRow) } : part);
}

/** Quantised entries of one dtype stacked along their rows: a new quantised entry. */
export function stackQuantised(parts) {
  const join = (field) => {
    const out = new parts[0][field].constructor(parts.reduce((n, p) => n + p[field].length, 0));
    parts.reduce((at, p) => (out.set(p[field], at), at + p[field].length), 0);
    return out;
  };
  const stacked = { dtype: parts[0].dtype, data: join('data'), scales: join('scales') };
  return made(parts[0].zeroPoints ? { ...stacked, zeroPoints: join('zeroPoints') } : stacked);
}
