// How loadStateDict() puts a state dict into a WebGPU module's parameter buffers
// (weight_storage.js's parameterWrites()): every entry that needs no conversion (float32 weights,
// biases, norm weights; 16-bit weights of the module's kind on whole words) is written from the
// caller's own memory, so a load makes no second copy of float32 weights; what is converted
// lands where parameter_layout.js puts it, whole u32 words per write, neighbours that share a
// word (16-bit or int8 values at odd places) in one write, never overwriting each other. Then the
// same odd layouts on the GPU against WASM. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import {
  MASK_SENTINEL, asFloat32, parameterBufferBytes, parameterLayout, parameterWrites, quantizeQ8, resolveMhaConfig, roundToHalf, scaleOffsets,
} from '../internals.mjs';
import { filled } from '../contract/random.mjs';
import { freshDevice, gpuMatchesWasm, randomStateDict } from './node_setup.mjs';

// Separate q/k/v weights of odd sizes: in 16-bit or int8 storage k_proj_weight and
// v_proj_weight start inside a u32 word (q is 25 values), and out_proj.weight ends in one.
const ODD = { embedDim: 5, numHeads: 1, kdim: 3, vdim: 7, sinks: true };
const F32_ALL = { embedDim: 8, numHeads: 2, numKvHeads: 1, kdim: 5, vdim: 3, sinks: true, qkNorm: {}, bias: { q: true, k: false, v: true, out: true } };

/** A module's resolved config and its entries as loadStateDict() hands them on: [{ name, data, dtype, shape }]. */
async function entriesOf(create, { half } = {}) {
  const config = resolveMhaConfig(create);
  const shapesOf = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
  const shapes = shapesOf.stateDictShapes;
  shapesOf.dispose();
  const entries = shapes.map(({ name, shape }, i) => {
    const data = filled(shape.reduce((a, b) => a * b, 1), 40 + i, 0.5);
    if (name === 'sinks') data[0] = -Infinity;  // no sink for head 0: the sentinel goes up
    if (half && shape.length === 2) return { name, shape, data: roundToHalf(half, data), dtype: half };
    return { name, shape, data, dtype: 'float32' };
  });
  return { config, entries };
}

/** The writes applied to zeroed buffers of parameterBufferBytes(): name → Uint8Array; checks alignment and overlap. */
function applied(config, writes) {
  const buffers = Object.fromEntries(Object.entries(parameterBufferBytes(config)).map(([name, n]) => [name, new Uint8Array(n)]));
  const covered = Object.fromEntries(Object.keys(buffers).map((name) => [name, new Uint8Array(buffers[name].length)]));
  for (const { buffer, offset, data } of writes) {
    assert.ok(offset % 4 === 0 && data.byteLength % 4 === 0, `${buffer}: a write of ${data.byteLength} bytes at ${offset}`);
    assert.ok(offset + data.byteLength <= buffers[buffer].length, `${buffer}: a write past the buffer's end`);
    assert.ok(covered[buffer].subarray(offset, offset + data.byteLength).every((c) => c === 0), `${buffer}: writes overlap at ${offset}`);
    covered[buffer].fill(1, offset, offset + data.byteLength);
    buffers[buffer].set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), offset);
  }
  return buffers;
}

const SCALES_OF = { in_proj_weight: 'q', q_proj_weight: 'q', k_proj_weight: 'k', v_proj_weight: 'v' };

/** Each entry read back from the buffers, as the module's weightsDtype stores it, against its conversion. */
function assertStored(config, entries, buffers) {
  const dtype = config.weightsDtype;
  const layout = parameterLayout(config).entries;
  const view = (Type, name) => new Type(buffers[name].buffer, 0, buffers[name].length / Type.BYTES_PER_ELEMENT);
  for (const { name, shape, data, dtype: given } of entries) {
    const [buffer, at] = layout[name];
    const n = data.length;
    const values = asFloat32(data, given);
    if (buffer !== 'win' && buffer !== 'wout' || dtype === 'float32') {
      const got = view(Float32Array, buffer).subarray(at, at + n);
      assert.deepEqual(got, name === 'sinks' ? values.map((x) => (x === -Infinity ? MASK_SENTINEL : x)) : values, name);
    } else if (dtype === 'int8') {
      const { q, scales } = quantizeQ8(values, shape[1]);
      assert.deepEqual(view(Int8Array, buffer).subarray(at, at + n), q, name);
      const first = buffer === 'wout' ? 0 : scaleOffsets(config)[SCALES_OF[name]];
      assert.deepEqual(view(Float32Array, `s${buffer}`).subarray(first, first + scales.length), scales, `${name}'s scales`);
    } else {
      assert.deepEqual(view(Uint16Array, buffer).subarray(at, at + n), given === dtype ? data : roundToHalf(dtype, values), name);
    }
  }
}

test('float32 weights load without a second copy: every write is an entry\'s own memory, one write per entry', async () => {
  const { config, entries } = await entriesOf(F32_ALL);
  const writes = parameterWrites(config, entries);
  const sinks = entries.find((e) => e.name === 'sinks');
  for (const { buffer, data } of writes) {
    // The -Inf sink is the one conversion: a new array of numHeads floats.
    if (buffer === 'sinks') continue;
    assert.ok(entries.some((e) => e.data === data), `${buffer}: written from a copy (${data.constructor.name}(${data.length}))`);
  }
  assert.equal(writes.length, entries.length);
  assert.equal(writes.find((w) => w.buffer === 'sinks').data.length, sinks.data.length);
  assertStored(config, entries, applied(config, writes));
});

test('16-bit weights of the module\'s kind on whole words load from the caller\'s memory too', async () => {
  for (const half of ['float16', 'bfloat16']) {
    const { config, entries } = await entriesOf({ embedDim: 8, numHeads: 2, weightsDtype: half }, { half });
    const writes = parameterWrites(config, entries);
    assert.ok(writes.every(({ data }) => entries.some((e) => e.data === data)), `${half}: a write from a copy`);
    assertStored(config, entries, applied(config, writes));
  }
});

test('converted and odd-placed weights land where the layout puts them, words shared by neighbours written once', async () => {
  for (const weightsDtype of ['float32', 'float16', 'bfloat16', 'int8']) {
    for (const half of [undefined, 'float16', 'bfloat16']) {
      if (half && weightsDtype !== 'float32' && weightsDtype !== 'int8' && half !== weightsDtype) continue;  // a DTypeError at load
      for (const create of [ODD, { ...ODD, numHeads: 5, bias: false }, { embedDim: 6, numHeads: 2, kdim: 9, vdim: 5 }]) {
        const { config, entries } = await entriesOf({ ...create, weightsDtype }, { half });
        assertStored(config, entries, applied(config, parameterWrites(config, entries)));
      }
    }
  }
});

test('the odd layouts on the GPU compute what WASM computes, per weightsDtype', async () => {
  for (const weightsDtype of ['float16', 'bfloat16', 'int8']) {
    await gpuMatchesWasm({ create: { ...ODD, weightsDtype }, B: 2, L: 3, S: 4 });
    await gpuMatchesWasm({ create: { embedDim: 6, numHeads: 2, kdim: 9, vdim: 5, weightsDtype }, B: 1, L: 5, S: 6 });
  }
});

test('loadStateDict() on WebGPU writes float32 weights from the state dict\'s own arrays', async () => {
  const device = await freshDevice();
  const create = { embedDim: 16, numHeads: 4, numKvHeads: 2, qkNorm: {} };
  const mha = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: device });
  const sd = randomStateDict(mha.stateDictShapes, 3);
  const sources = new Set(Object.values(sd).map((t) => t.data.buffer));
  const written = [];
  const { queue } = device;
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = function (buffer, offset, data, ...rest) {
    written.push(data instanceof ArrayBuffer ? data : data.buffer);
    return writeBuffer.call(this, buffer, offset, data, ...rest);
  };
  try {
    mha.loadStateDict(sd);
  } finally {
    queue.writeBuffer = writeBuffer;
    mha.dispose();
    device.destroy();
  }
  assert.equal(written.length, Object.keys(sd).length);
  assert.ok(written.every((b) => sources.has(b)), 'a write from memory other than the state dict\'s');
});
