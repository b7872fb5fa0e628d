// A module's weights on the GPU as its weightsDtype stores them (docs/attention-math.md): the
// weight matrices float32, or 16-bit two per u32 (rounded to nearest-even from float32, 16-bit
// tensors of the module's kind kept as given), or int8 four per u32 (llama.cpp's q8_0) with a
// float32 scale buffer per matrix buffer, or int4 codes eight per u32 (llama.cpp's q4_0, or a
// checkpoint's blocks as stored) with a float32 scale buffer and a zero-point buffer (4 bits
// each, eight per u32, laid out as the scales) per matrix buffer; biases float32 always. The buffers and offsets are
// parameter_layout.js's, counted in elements; the linear kernels read them through weight(n, k)
// (kernels/linear_common.wgsl.js).
import { asFloat32, roundToHalf } from '../storage/half_floats.js';
import { parameterLayout } from '../storage/parameter_layout.js';
import { ENTRY } from '../storage/state_dict_entries.js';
import { blocksPerRow, quantizeQ8 } from '../storage/q8_0.js';
import { quantizeQ4 } from '../storage/q4_0.js';
import { MASK_SENTINEL } from './kernels/attention_common.wgsl.js';
import { isAttentionOnly } from '../base/attention_only.js';

/** Bytes per weight element of each weightsDtype. */
const ELEMENT_BYTES = { float32: 4, float16: 2, bfloat16: 2, int8: 1, int4: 0.5 };

/** The weightsDtypes stored in blocks with a float32 scale each (and int4 a zero point). */
const BLOCKED = ['int8', 'int4'];

/** The weight matrix buffers (the others, biases, are float32). */
const MATRICES = ['win', 'wout'];

/**
 * Where each weight matrix's int8 or int4 scales start in its buffer's scale buffer (swin, swout),
 * in floats (an int4 matrix's zero points, in zwin and zwout, at the same indices): W_q, W_k and
 * W_v stacked as their rows are (one scale per 32 values of a row), and how many each holds. The linear problems read q, k, v (linear_problems.js).
 */
export function scaleOffsets({ embedDim: E, numHeads: H, numKvHeads: G, kdim, vdim, headDim: dk, valueHeadDim: dv }) {
  const k = H * dk * blocksPerRow(E);
  const v = k + G * dk * blocksPerRow(kdim);
  return { q: 0, k, v, swin: v + G * dv * blocksPerRow(vdim), swout: E * blocksPerRow(H * dv) };
}

/**
 * The buffers that go with weight matrix buffer `matrix` ('win' | 'wout') of `params` (the
 * module's buffers by name), in binding order after it: int8 and int4 scales, int4 zero points.
 */
export const blockBuffers = (params, matrix) => [params[`s${matrix}`], params[`z${matrix}`]].filter(Boolean);

// The buffers of options a module may not have: made only when it has them (nothing binds them else).
const OPTIONAL = { sinks: (c) => Boolean(c.sinks), qNorm: (c) => Boolean(c.qkNorm), kNorm: (c) => Boolean(c.qkNorm) };

/**
 * The module's GPU buffers, name → bytes (a multiple of 4, at least 4): win, bin, wout, bout, for
 * int8 and int4 weights swin and swout (their scales), for int4 zwin and zwout (their zero
 * points), and sinks, qNorm, kNorm when configured.
 */
export function parameterBufferBytes(config) {
  if (isAttentionOnly(config)) return {};  // attention only (api/attention_engines.js): no weights
  const dtype = config.weightsDtype ?? 'float32';
  const buffers = Object.entries(parameterLayout(config).buffers).filter(([name]) => OPTIONAL[name]?.(config) ?? true);
  const bytes = Object.fromEntries(buffers.map(([name, elements]) =>
    [name, (MATRICES.includes(name) ? elements * ELEMENT_BYTES[dtype] : elements * 4)]));
  if (BLOCKED.includes(dtype)) {
    const { swin, swout } = scaleOffsets(config);
    Object.assign(bytes, { swin: swin * 4, swout: swout * 4 });
    if (dtype === 'int4') Object.assign(bytes, { zwin: swin * ELEMENT_BYTES.int4, zwout: swout * ELEMENT_BYTES.int4 });
  }
  return Object.fromEntries(Object.entries(bytes).map(([name, b]) => [name, Math.max(4, Math.ceil(b / 4) * 4)]));
}

// The rows' length (the input dimension) of each weight entry: its q8_0 blocks run along it.
function inputWidth(name, { embedDim: E, kdim, vdim, numHeads: H, valueHeadDim: dv }) {
  return { [ENTRY.inProjWeight]: E, [ENTRY.qProjWeight]: E, [ENTRY.kProjWeight]: kdim, [ENTRY.vProjWeight]: vdim, [ENTRY.outProjWeight]: H * dv }[name];
}

const asFloats = ({ data, dtype }) => asFloat32(data, dtype);

// An entry's values as its buffer stores them, [{ buffer, at (bytes), values (a typed array) }]:
// the caller's own array where no conversion is needed (float32 data for a float32 buffer, 16-bit
// data of the module's kind), else the conversion's result (rounded, quantised with its scales,
// the sinks' -Inf mapped).
function storedParts(entry, { config, dtype, layout, scales }) {
  const [buffer, at] = layout[entry.name];
  if (buffer === 'sinks') {
    // A -Inf sink (no sink) goes up as the masks' finite sentinel, so that no infinity enters
    // the shaders (WGSL lets a GPU assume none): e^(sentinel − m) is 0 all the same.
    const values = asFloats(entry);
    return [{ buffer, at: at * 4, values: values.includes(-Infinity) ? values.map((x) => (x === -Infinity ? MASK_SENTINEL : x)) : values }];
  }
  if (!MATRICES.includes(buffer) || dtype === 'float32') return [{ buffer, at: at * 4, values: asFloats(entry) }];
  if (BLOCKED.includes(dtype)) return blockedParts(entry, buffer, at, { config, dtype, layout, scales });
  return [{ buffer, at: at * ELEMENT_BYTES[dtype], values: entry.dtype === dtype ? entry.data : roundToHalf(dtype, asFloats(entry)) }];
}

// An int8 or int4 matrix entry's parts: codes, scales (and int4 zero points, in nibbles). Blocks
// quantised already (a checkpoint's, storage/quantised_tensors.js) go up as they are; float
// weights are quantised by the core's rule (q8_0.js, q4_0.js).
function blockedParts(entry, buffer, at, { config, dtype, layout, scales }) {
  const first = buffer === 'wout' ? 0 : { 0: scales.q, [layout[ENTRY.kProjWeight][1]]: scales.k, [layout[ENTRY.vProjWeight][1]]: scales.v }[at];
  const width = inputWidth(entry.name, config);
  if (dtype === 'int8') {
    const { q, scales: s } = entry.scales ? { q: entry.data, scales: entry.scales } : quantizeQ8(asFloats(entry), width);
    return [{ buffer, at: at * ELEMENT_BYTES.int8, values: q }, { buffer: `s${buffer}`, at: first * 4, values: s }];
  }
  const { data, scales: s, zeroPoints } = entry.scales ? entry : quantizeQ4(asFloats(entry), width);
  return [nibbles(buffer, at, data), { buffer: `s${buffer}`, at: first * 4, values: s }, nibbles(`z${buffer}`, first, zeroPoints)];
}

// 4-bit values (0-15, one a byte) from value index `at` of a buffer, two a byte, the first in the
// low nibble (value i is nibble i mod 8 of u32 word i / 8: packed_values.wgsl.js): a part whose
// first and last bytes may hold a neighbour's nibble too, so it is always merged (packedRuns()).
function nibbles(buffer, at, codes) {
  const shift = at % 2;
  const bytes = new Uint8Array(Math.ceil((shift + codes.length) / 2));
  for (let i = 0; i < codes.length; i++) bytes[(shift + i) >> 1] |= codes[i] << (((shift + i) & 1) * 4);
  return { buffer, at: (at - shift) / 2, values: bytes, shared: true };
}

const WORD = 4;  // writeBuffer's alignment: offset and size multiples of 4 bytes
const aligned = ({ at, values, shared }) => !shared && at % WORD === 0 && values.byteLength % WORD === 0;

// Parts that start or end inside a u32 word (16-bit, int8 or int4 values at an odd place: they
// share a word, int4 even a byte, with their neighbour) packed into runs of whole words,
// neighbours in one run (their bytes or-ed together: a shared byte holds both nibbles).
function packedRuns(parts) {
  const runs = [];
  for (const part of [...parts].sort((a, b) => a.buffer.localeCompare(b.buffer) || a.at - b.at)) {
    const begin = part.at - (part.at % WORD), end = Math.ceil((part.at + part.values.byteLength) / WORD) * WORD;
    const last = runs.at(-1);
    if (last && last.buffer === part.buffer && begin < last.end) {
      last.end = Math.max(last.end, end);
      last.parts.push(part);
    } else {
      runs.push({ buffer: part.buffer, begin, end, parts: [part] });
    }
  }
  return runs.map(({ buffer, begin, end, parts: inRun }) => {
    const bytes = new Uint8Array(end - begin);
    for (const { at, values, shared } of inRun) {
      const from = new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
      if (!shared) bytes.set(from, at - begin);
      else for (let i = 0, o = at - begin; i < from.length; i++) bytes[o + i] |= from[i];
    }
    return { buffer, offset: begin, data: bytes };
  });
}

/**
 * The writes that load the state-dict entries ([{ name, data, dtype }], checked and complete, as
 * loadStateDict() gives them: state_dict.js has refused non-finite weights already, before
 * anything was loaded) into the parameter buffers: [{ buffer (name), offset (bytes), data (an
 * ArrayBufferView) }], offsets and sizes multiples of 4, all of them computed before the caller
 * writes any. An entry that needs no conversion (every float32 entry of a float32 buffer, 16-bit
 * data of the module's kind where it lies on whole words) is written from the caller's own
 * memory: no second copy of float32 weights is made; what must be converted is, once. Bytes of a
 * buffer that no write covers stay as they are (zero: no entry goes there).
 */
export function parameterWrites(config, entries) {
  const context = { config, dtype: config.weightsDtype ?? 'float32', layout: parameterLayout(config).entries, scales: scaleOffsets(config) };
  const parts = entries.flatMap((entry) => storedParts(entry, context));
  const direct = parts.filter(aligned).map(({ buffer, at, values }) => ({ buffer, offset: at, data: values }));
  return [...direct, ...packedRuns(parts.filter((part) => !aligned(part)))];
}
