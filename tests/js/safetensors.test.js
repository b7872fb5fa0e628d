// loadSafetensors() on valid files: values bit for bit as PyTorch converts them (files and
// expected values written by tests/fixtures/make_safetensors.py), every kind of input buffer,
// alignment, odd tensor names, scalars and zero-size tensors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { loadSafetensors, SafetensorsError } from '#webattention';
import { decodeTensor } from '../contract/decode.mjs';
import { entry, f32Bytes, fixtureBytes, fixtureJson, safetensorsBytes, validFile } from './safetensors_files.js';

const bits = (f32) => [...new Uint32Array(f32.buffer, f32.byteOffset, f32.length)];

test('PyTorch-written file: every tensor bit for bit as torch converts it (F32, F16, BF16, ±0, subnormals, inf, NaN)', () => {
  const { metadata, tensors } = fixtureJson('dtypes.json');
  const file = loadSafetensors(fixtureBytes('dtypes.safetensors'));
  assert.deepEqual([...file.keys()], Object.keys(tensors));
  for (const [name, { dtype, shape, expected }] of Object.entries(tensors)) {
    const want = decodeTensor(expected);
    const got = file.get(name);
    assert.equal(got.dtype, dtype, name);
    assert.deepEqual(got.shape, shape, name);
    assert.ok(got.data instanceof Float32Array, name);
    assert.deepEqual(bits(got.data), bits(want.data), name);
  }
  assert.ok(file.metadata instanceof Map);
  assert.deepEqual(Object.fromEntries(file.metadata), metadata);
});

test('all 65536 F16 and all 65536 BF16 bit patterns convert as PyTorch converts them (SHA-256 of the float32 bits)', () => {
  const { sha256_of_f32_bits: want } = fixtureJson('conversions.json');
  const patterns = new Uint8Array(new Uint16Array(65536).map((_, i) => i).buffer);
  for (const dtype of ['F16', 'BF16']) {
    const { data } = loadSafetensors(safetensorsBytes({ all: entry(dtype, [65536], 0, 131072) }, patterns)).get('all');
    const digest = createHash('sha256').update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)).digest('hex');
    assert.equal(digest, want[dtype], dtype);
  }
});

test('a few conversions by hand: F16 max, smallest subnormal, -0; BF16 = the top half of the float32', () => {
  const data = new Uint8Array([0xff, 0x7b, 0x01, 0x00, 0x00, 0x80, 0x49, 0x40, 0x01, 0x7c, 0x81, 0x7f]);
  const file = loadSafetensors(safetensorsBytes({ h: entry('F16', [3], 0, 6), b: entry('BF16', [1], 6, 8), n: entry('F16', [1], 8, 10),
    m: entry('BF16', [1], 10, 12) }, data));
  assert.deepEqual([...file.get('h').data], [65504, 2 ** -24, -0]);
  assert.ok(Object.is(file.get('h').data[2], -0));
  assert.equal(file.get('b').data[0], 3.140625);
  assert.equal(bits(file.get('n').data)[0], 0x7fc02000, 'F16 signalling NaN: quieted, payload kept');
  assert.equal(bits(file.get('m').data)[0], 0x7f810000, 'BF16 NaN: the bits shifted, as torch does');
});

test('every kind of buffer holding the bytes gives the same tensors', () => {
  const bytes = validFile();
  const want = loadSafetensors(bytes);
  const odd = new Uint8Array(bytes.length + 3);
  odd.set(bytes, 3);
  const shared = new SharedArrayBuffer(bytes.length);
  new Uint8Array(shared).set(bytes);
  const eight = new ArrayBuffer(bytes.length + 8);
  new Uint8Array(eight).set(bytes, 8);
  const inputs = {
    ArrayBuffer: bytes.slice().buffer,
    'Uint8Array at byte offset 3': odd.subarray(3),
    'Node Buffer': Buffer.from(bytes),
    DataView: new DataView(odd.buffer, 3, bytes.length),
    SharedArrayBuffer: shared,
    'Float64Array view at byte offset 8': new Float64Array(eight, 8, bytes.length / 8),
  };
  assert.equal(bytes.length % 8, 0, 'the valid file is a whole number of float64s');
  for (const [kind, input] of Object.entries(inputs)) {
    const got = loadSafetensors(input);
    assert.deepEqual([...got.keys()], [...want.keys()], kind);
    for (const [name, t] of want) assert.deepEqual(got.get(name), t, `${kind}: ${name}`);
  }
});

test('a detached buffer reads as an empty file', () => {
  const bytes = validFile();
  structuredClone(bytes.buffer, { transfer: [bytes.buffer] });
  assert.throws(() => loadSafetensors(bytes), (e) => e instanceof SafetensorsError && /file: 0 bytes/.test(e.message));
  assert.throws(() => loadSafetensors(bytes.buffer), (e) => e instanceof SafetensorsError && /file: 0 bytes/.test(e.message));
});

test('aligned F32 data is a view on the input, unaligned data a copy with the same values', () => {
  // The header is padded to 8 bytes, so tensor 'a' at data offset 0 is aligned; 'u' after 2 F16 bytes is not.
  const data = new Uint8Array(4 + 2 + 8);
  data.set(f32Bytes([7]), 0);
  data.set(f32Bytes([1.25, -3]), 6);
  const header = JSON.stringify({ a: entry('F32', [1], 0, 4), h: entry('F16', [1], 4, 6), u: entry('F32', [2], 6, 14) });
  const bytes = safetensorsBytes(header.padEnd(Math.ceil(header.length / 8) * 8, ' '), data);
  const file = loadSafetensors(bytes);
  assert.equal(file.get('a').data.buffer, bytes.buffer, 'aligned: a view');
  assert.deepEqual([...file.get('a').data], [7]);
  assert.notEqual(file.get('u').data.buffer, bytes.buffer, 'unaligned: a copy');
  assert.deepEqual([...file.get('u').data], [1.25, -3]);
  // The same file at an odd byte offset: nothing aligned, every value the same.
  const shifted = new Uint8Array(bytes.length + 1);
  shifted.set(bytes, 1);
  const again = loadSafetensors(shifted.subarray(1));
  assert.notEqual(again.get('a').data.buffer, shifted.buffer);
  assert.deepEqual([...again.get('a').data], [7]);
  assert.deepEqual([...again.get('u').data], [1.25, -3]);
});

test('odd names are plain names: __proto__, constructor, the empty string, integer-like names in file order', () => {
  const names = ['__proto__', 'constructor', 'hasOwnProperty', '', '10', '2', 'toString', 'émoji 🙂', 'a.b.c'];
  // Written by hand: a JS object (JSON.stringify's input) would list '2' and '10' first.
  const entries = names.map((name, i) => `${JSON.stringify(name)}:${JSON.stringify(entry('F32', [], 4 * i, 4 * i + 4))}`);
  const header = `{${entries.join(',')},"__metadata__":{"__proto__":"p","constructor":"c"}}`;
  const file = loadSafetensors(safetensorsBytes(header, f32Bytes(names.map((_, i) => i))));
  assert.deepEqual([...file.keys()], names, 'the header\'s order, integer-like names included');
  names.forEach((name, i) => assert.deepEqual([...file.get(name).data], [i], name));
  assert.deepEqual([...file.metadata], [['__proto__', 'p'], ['constructor', 'c']]);
  assert.equal(Object.getPrototypeOf(file), Map.prototype);
  assert.equal({}.dtype, undefined);
  assert.equal(typeof {}.constructor, 'function');
});

test('scalars (shape []), zero-size tensors anywhere, an empty file, a padded header', () => {
  const file = loadSafetensors(safetensorsBytes(`${JSON.stringify({
    z0: entry('F16', [0], 0, 0), s: entry('BF16', [], 0, 2), z1: entry('F32', [3, 0, 2], 2, 2), z2: entry('F32', [0], 2, 2),
    t: entry('F32', [1, 1], 2, 6), z3: entry('BF16', [0, 5], 6, 6),
  })}   \n\t `, new Uint8Array([0x80, 0xbf, ...f32Bytes([2])])));
  assert.deepEqual(file.get('s'), { data: new Float32Array([-1]), shape: [], dtype: 'BF16' });
  for (const name of ['z0', 'z1', 'z2', 'z3']) assert.equal(file.get(name).data.length, 0, name);
  assert.deepEqual(file.get('z1').shape, [3, 0, 2]);
  assert.deepEqual([...file.get('t').data], [2]);
  const empty = loadSafetensors(safetensorsBytes({}));
  assert.equal(empty.size, 0);
  assert.equal(empty.metadata.size, 0);
});
