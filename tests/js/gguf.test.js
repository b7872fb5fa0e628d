// loadGguf(): GGUF files written by tests/fixtures/make_gguf.mjs in llama.cpp's layout read back
// bit for bit (F32, F16, BF16, Q8_0, Q4_0 as stored; every metadata type, nested arrays and
// strings), dequantised to the values the script computes in float64 from its own codes, and
// hostile files, each refused with the typed error that names its problem (class, `argument` and
// the words of the message), never another exception or a wrong tensor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadGguf, DTypeError, GgufError, OptionError, WebAttentionError } from '#webattention';
import { dequantizedGguf, ggufBytes, llamaGguf, rng, tensor } from '../fixtures/make_gguf.mjs';

const llama = llamaGguf();
const bytesOf = (data) => new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** The script's metadata as loadGguf returns it: arrays as arrays, FLOAT32 rounded. */
function expectedValue(type, value) {
  if (type === 'ARRAY') return value.values.map((v) => expectedValue(value.type, v));
  return type === 'FLOAT32' ? Math.fround(value) : value;
}

test('the llama fixture reads back bit for bit: names in file order, row-major shapes, types, views on the bytes', () => {
  const file = loadGguf(llama.bytes);
  assert.equal(file.version, 3);
  assert.equal(file.alignment, 32);
  assert.deepEqual([...file.keys()], llama.tensors.map((t) => t.name));
  const kept = { F32: undefined, F16: 'float16', BF16: 'bfloat16', Q8_0: 'q8_0', Q4_0: 'q4_0' };
  const arrays = { F32: Float32Array, F16: Uint16Array, BF16: Uint16Array, Q8_0: Uint8Array, Q4_0: Uint8Array };
  for (const t of llama.tensors) {
    const got = file.get(t.name);
    assert.equal(file.types.get(t.name), t.type, t.name);
    assert.equal(got.dtype, kept[t.type], t.name);
    assert.ok(got.data instanceof arrays[t.type], t.name);
    // GGUF's ne is innermost first; the shape is PyTorch's order: [ne[1], ne[0]].
    assert.deepEqual(got.shape, [...t.ne].reverse(), t.name);
    assert.deepEqual(bytesOf(got.data), t.data, `${t.name}: the bytes written`);
    assert.equal(got.data.buffer, llama.bytes.buffer, `${t.name}: a view, not a copy`);
  }
  assert.deepEqual(file.get('blk.0.attn_q.weight').shape, [64, 64]);
  assert.deepEqual(file.get('blk.0.attn_k.weight').shape, [32, 64]);
  assert.equal(file.get('blk.0.attn_q.weight').data.length, 64 * 2 * 18, 'Q4_0: 18 bytes per block of 32');
  assert.equal(file.get('blk.0.attn_k.weight').data.length, 32 * 2 * 34, 'Q8_0: 34 bytes per block of 32');
});

test('metadata: every value type in file order, uint64 / int64 as BigInt, strings as UTF-8, nested arrays as arrays', () => {
  const { metadata } = loadGguf(llama.bytes);
  assert.deepEqual([...metadata.keys()], llama.metadata.map(([key]) => key));
  for (const [key, type, value] of llama.metadata) assert.deepEqual(metadata.get(key), expectedValue(type, value), key);
  assert.equal(metadata.get('general.architecture'), 'llama');
  assert.equal(metadata.get('llama.attention.head_count_kv'), 2);
  assert.equal(metadata.get('test.uint64'), 2n ** 64n - 1n);
  assert.equal(metadata.get('test.int64'), -(2n ** 63n));
  assert.deepEqual(metadata.get('test.nested'), [[1, -2], ['x', 'yz'], []]);
  assert.equal(metadata.get('tokenizer.ggml.tokens')[7], '\u{1f600}');
});

test('unaligned bytes: F32 / F16 / BF16 copied with the same bits, Q8_0 / Q4_0 blocks still views', () => {
  const shifted = new Uint8Array(llama.bytes.length + 1);
  shifted.set(llama.bytes, 1);
  const file = loadGguf(shifted.subarray(1));
  for (const t of llama.tensors) {
    const got = file.get(t.name);
    assert.deepEqual(bytesOf(got.data), t.data, t.name);
    assert.equal(got.data.buffer === shifted.buffer, t.type.startsWith('Q'), `${t.name}: a view only for the byte blocks`);
  }
  // An ArrayBuffer and a DataView are bytes too.
  assert.deepEqual([...loadGguf(llama.bytes.buffer).keys()], [...file.keys()]);
  assert.deepEqual([...loadGguf(new DataView(llama.bytes.buffer)).keys()], [...file.keys()]);
});

test('{ dequantize: true }: every tensor float32, equal to the script\'s float64 values of the stored codes (Q4_0 and Q8_0 by llama.cpp\'s quantisers)', () => {
  const file = loadGguf(llama.bytes, { dequantize: true });
  for (const t of llama.tensors) {
    const got = file.get(t.name);
    assert.ok(got.data instanceof Float32Array && got.dtype === undefined, t.name);
    assert.deepEqual(got.shape, t.shape, t.name);
    assert.deepEqual(Array.from(got.data), Array.from(t.values), t.name);
  }
  // The script's Q4_0 has an all-zero block: its values are zeros (−0 as llama.cpp's: d = 0 / −8 is −0).
  assert.ok(file.get('blk.0.attn_q.weight').data.subarray(32, 64).every((v) => Object.is(v, -0)));
  assert.ok(Array.from(file.get('blk.0.attn_q.weight').data).some((v) => v !== 0));
});

test('Q4_1, Q5_0, Q5_1: a GgufError naming the tensor and its type, float32 by llama.cpp\'s rules with { dequantize: true }', () => {
  const q = dequantizedGguf();
  assert.throws(() => loadGguf(q.bytes), (e) => e instanceof GgufError && e.argument === 'tensor "blk.0.q4_1.weight" type'
    && e.actual === 'Q4_1' && /Q4_1 is not kept as stored; pass \{ dequantize: true \}/.test(e.message));
  const file = loadGguf(q.bytes, { dequantize: true });
  for (const t of q.tensors) {
    assert.equal(file.types.get(t.name), t.type);
    assert.deepEqual(file.get(t.name).shape, [2, 64]);
    assert.deepEqual(Array.from(file.get(t.name).data), Array.from(t.values), t.name);
  }
});

test('Q5_0 and Q4_0 keep llama.cpp\'s sign of zero: a code of 0 times a negative d is −0 (no + 0 after x·d)', () => {
  // One Q5_0 block: d = −1 (F16 0xbc00), qh 0, every nibble 0 → code 0 − 16 = −16 → 16; and
  // elements with code 16 (nibble 0, fifth bit 1) → 0 · −1 = −0.
  const q5 = new Uint8Array(22);
  q5.set([0x00, 0xbc, 0xff, 0xff, 0xff, 0xff]);
  const q4 = new Uint8Array(18);
  q4.set([0x00, 0xbc]);
  q4.fill(0x88, 2);
  const file = loadGguf(ggufBytes({ tensors: [{ name: 'a', ne: [32], type: 'Q5_0', data: q5 }, { name: 'b', ne: [32], type: 'Q4_0', data: q4 }] }),
    { dequantize: true });
  assert.ok(file.get('a').data.every((v) => Object.is(v, -0)), Array.from(file.get('a').data).join());
  assert.ok(file.get('b').data.every((v) => Object.is(v, -0)), Array.from(file.get('b').data).join());
});

test('types without a dequantiser (Q4_K, Q6_K, Q8_1): a GgufError naming the tensor and its type, with or without dequantize', () => {
  for (const [type, block, size] of [['Q4_K', 256, 144], ['Q6_K', 256, 210], ['Q8_1', 32, 36]]) {
    const bytes = ggufBytes({ tensors: [{ name: 'w', ne: [block], type, data: new Uint8Array(size) }] });
    for (const options of [undefined, { dequantize: true }]) {
      assert.throws(() => loadGguf(bytes, options), (e) => e instanceof GgufError && e.argument === 'tensor "w" type' && e.actual === type
        && e.message.includes(`${type} is not `) && e.message.includes('Q4_0, Q4_1, Q5_0, Q5_1, Q8_0'), `${type} ${JSON.stringify(options)}`);
    }
  }
});

test('options and argument: unknown or non-boolean options are OptionErrors, non-bytes a DTypeError', () => {
  assert.throws(() => loadGguf(llama.bytes, { dequantise: true }), (e) => e instanceof OptionError && e.argument === 'dequantise');
  assert.throws(() => loadGguf(llama.bytes, { dequantize: 1 }), (e) => e instanceof OptionError && e.argument === 'dequantize');
  assert.throws(() => loadGguf('model.gguf'), (e) => e instanceof DTypeError && e.argument === 'bytes');
  assert.throws(() => loadGguf([71, 71, 85, 70]), (e) => e instanceof DTypeError && e.argument === 'bytes');
});

test('general.alignment 64: offsets and the data start on 64, read back the same; a file of no tensors', () => {
  const random = rng(5);
  const tensors = [tensor('a', 'F32', [3], random), tensor('b', 'Q8_0', [32], random)];
  const bytes = ggufBytes({ metadata: [['general.alignment', 'UINT32', 64]], tensors, alignment: 64 });
  const file = loadGguf(bytes);
  assert.equal(file.alignment, 64);
  for (const t of tensors) assert.deepEqual(bytesOf(file.get(t.name).data), t.data);
  assert.equal(file.get('b').data.byteOffset % 64, 0);
  const empty = loadGguf(ggufBytes({ metadata: [['k', 'STRING', 'v']], version: 2 }));
  assert.equal(empty.size, 0);
  assert.equal(empty.version, 2);
  assert.deepEqual([...empty.metadata], [['k', 'v']]);
});

// Hostile files. Offsets in the header of ggufBytes(): magic 0, version 4, tensor count 8,
// metadata count 16, the first key's length 24. ggufBytes() pads the header to 32 bytes, so a
// count checked against "the rest of the file" counts the padding too.
const patched = (bytes, at, write) => {
  const copy = bytes.slice();
  write(new DataView(copy.buffer), at);
  return copy;
};
const u64At = (bytes, at, v) => patched(bytes, at, (view) => view.setBigUint64(at, v, true));
const u32At = (bytes, at, v) => patched(bytes, at, (view) => view.setUint32(at, v, true));
const f32Tensor = (name, ne, extra = {}) => ({ name, ne, type: 'F32', data: new Uint8Array(4 * ne.reduce((a, b) => a * b, 1)), ...extra });
const one = (t, options) => ggufBytes({ tensors: [t], ...options });
const meta = (...metadata) => ggufBytes({ metadata });
const nested = (depth) => (depth === 0 ? { type: 'UINT8', values: [1] } : { type: 'ARRAY', values: [nested(depth - 1)] });
const small = ggufBytes({ metadata: [['a', 'UINT8', 1]], tensors: [f32Tensor('w', [4])] });
// The one tensor info of `small` starts after the preamble (24) and the pair (8 + 1 + 4 + 1 = 14).
const INFO = 24 + 14;
const NAME_END = INFO + 8 + 1;

// [case, bytes, argument, parts of the message]
const CASES = [
  ['empty file', new Uint8Array(0), 'magic', ['an empty file']],
  ['wrong magic', ggufBytes({ magic: 'GGML' }), 'magic', ["expected the bytes 'GGUF'", '47 47 4d 4c']],
  ['version 1', ggufBytes({ version: 1 }), 'version', ['1 is not supported (version 1 has 32-bit counts']],
  ['version 4', ggufBytes({ version: 4 }), 'version', ['4 is not supported; expected 2 or 3']],
  ['big-endian', ggufBytes({ version: 0x03000000 }), 'version', ['50331648 is not supported (a big-endian file?']],
  ['cut in the counts', ggufBytes().subarray(0, 20), 'metadata count', ['needs 8 bytes at offset 16, past the end of the file (4 left)']],
  ['tensor count 2^64 − 1', u64At(small, 8, 2n ** 64n - 1n), 'tensor count', ['18446744073709551615 tensors, more than the']],
  ['metadata count 2^40', u64At(small, 16, 2n ** 40n), 'metadata count', ['1099511627776 key-value pairs, more than']],
  ['key length 2^63', u64At(small, 24, 2n ** 63n), 'metadata key 0 length', ['9223372036854775808 bytes, more than the']],
  ['key not UTF-8', patched(small, 32, (v) => v.setUint8(32, 0xff)), 'metadata key 0', ['not valid UTF-8']],
  ['value type 13', u32At(small, 33, 13), 'metadata "a" type', ['13 is not a GGUF value type (0–12']],
  ['bool 2', patched(meta(['b', 'BOOL', true]), 37, (v) => v.setUint8(37, 2)), 'metadata "b"', ['a bool is 0 or 1, got 2']],
  ['array element type 13', u32At(meta(['r', 'ARRAY', { type: 'UINT8', values: [] }]), 37, 13), 'metadata "r" element type', ['13 is not a GGUF value type']],
  ['array count past the end', u64At(meta(['r', 'ARRAY', { type: 'UINT32', values: [1] }]), 41, 4n), 'metadata "r" count', ['4 UINT32 elements, more than the 3']],
  ['string in an array past the end', u64At(meta(['r', 'ARRAY', { type: 'STRING', values: ['ab'] }]), 49, 8n), 'metadata "r"[0] length', ['8 bytes, more than the 7']],
  ['arrays nested 17 deep', meta(['n', 'ARRAY', nested(16)]), `metadata "n"${'[0]'.repeat(16)}`, ['arrays nested deeper than 16 levels']],
  ['duplicate metadata key', meta(['k', 'UINT8', 1], ['k', 'UINT8', 1]), 'metadata "k"', ['duplicate key']],
  ['alignment 0', meta(['general.alignment', 'UINT32', 0]), 'metadata "general.alignment"', ['expected a power of two, got 0']],
  ['alignment 48', meta(['general.alignment', 'UINT32', 48]), 'metadata "general.alignment"', ['expected a power of two, got 48']],
  ['alignment as UINT64', meta(['general.alignment', 'UINT64', 32n]), 'metadata "general.alignment"', ['expected a UINT32, got a UINT64']],
  ['alignment as FLOAT32', meta(['general.alignment', 'FLOAT32', 32]), 'metadata "general.alignment"', ['expected a UINT32, got a FLOAT32']],
  ['n_dims 0', one(f32Tensor('w', [])), 'tensor "w" n_dims', ['0; expected 1 to 4']],
  ['n_dims 5', one(f32Tensor('w', [1, 1, 1, 1, 1])), 'tensor "w" n_dims', ['5; expected 1 to 4']],
  ['a dim of 0', one(f32Tensor('w', [4, 0])), 'tensor "w" dims', ['ne[1] = 0: dims must be positive']],
  ['dims past 2^53', one({ name: 'w', ne: [2 ** 30, 2 ** 30], type: 'F32', data: new Uint8Array(0) }), 'tensor "w" dims',
    ['ne[1] = 1073741824: dims must be positive and their product at most 2^53 − 1']],
  ['type id 4 (removed from ggml)', one(f32Tensor('w', [4], { type: 4 })), 'tensor "w" type', ['4 is not a GGML type id']],
  ['type id 2^32 − 1', one(f32Tensor('w', [4], { type: 2 ** 32 - 1 })), 'tensor "w" type', ['4294967295 is not a GGML type id']],
  ['Q4_0 rows of 48', one({ name: 'w', ne: [48], type: 'Q4_0', data: new Uint8Array(27) }), 'tensor "w" dims',
    ["ne[0] = 48 is not a multiple of Q4_0's block of 32"]],
  ['name of 64 bytes', one(f32Tensor('n'.repeat(64), [1])), `tensor "${'n'.repeat(64)}" name`, ["64 bytes, over llama.cpp's 63"]],
  ['name length past the end', u64At(small, INFO, 100n), 'tensor 0 name length', ['100 bytes, more than the']],
  // The tensor count is checked against the bytes left before any info is read.
  ['cut in the tensor infos', small.subarray(0, NAME_END - 1), 'tensor count', ['1 tensors, more than the 0']],
  ['duplicate tensor name', ggufBytes({ tensors: [f32Tensor('w', [4]), f32Tensor('w', [4])] }), 'tensor "w"', ['duplicate name']],
  ['offset not aligned', one(f32Tensor('w', [4], { offset: 16 })), 'tensor "w" offset', ['16 is not a multiple of the alignment 32']],
  ['offset past the end', u64At(small, NAME_END + 4 + 8 + 4, 32n), 'tensor "w" offset', ['[32, 48) ([4] of F32) runs past the end of the data (32 bytes)']],
  ['data cut short', small.subarray(0, small.length - 17), 'tensor "w" offset', ['[0, 16) ([4] of F32) runs past the end of the data (15 bytes)']],
  ['overlapping tensors', ggufBytes({ tensors: [f32Tensor('a', [16]), f32Tensor('b', [8], { offset: 32 })] }), 'tensor "b" offset',
    ['[32, 64) overlaps tensor "a" [0, 64)']],
  ['the same bytes twice', ggufBytes({ tensors: [f32Tensor('a', [8]), f32Tensor('b', [8], { offset: 0 })] }), 'tensor "b" offset', ['overlaps tensor "a"']],
  ['data start past the end', small.subarray(0, 80), 'data', ['starts at 96 (the header\'s end 71 aligned to 32), past the end of the file (80 bytes)']],
];

for (const [name, bytes, argument, parts] of CASES) {
  test(`hostile: ${name} → GgufError (${argument})`, () => {
    assert.throws(() => loadGguf(bytes), (e) => {
      assert.ok(e instanceof GgufError && e instanceof WebAttentionError, `${e?.name}: ${e?.message}`);
      assert.equal(e.name, 'GgufError');
      assert.equal(e.argument, argument, e.message);
      assert.ok(e.message.startsWith(`gguf ${argument}: `), e.message);
      for (const part of parts) assert.ok(e.message.includes(part), `"${e.message}" lacks "${part}"`);
      assert.ok('expected' in e && e.actual !== undefined, 'expected and actual set');
      return true;
    });
  });
}

test('hostile cases are hostile only where they say: the unpatched files load', () => {
  assert.equal(loadGguf(small).get('w').data.length, 4);
  assert.equal(loadGguf(meta(['n', 'ARRAY', nested(15)])).metadata.get('n').flat(Infinity)[0], 1);
  assert.equal(loadGguf(meta(['b', 'BOOL', true])).metadata.get('b'), true);
  assert.equal(loadGguf(one(f32Tensor('n'.repeat(63), [1]))).size, 1);
  assert.equal(loadGguf(ggufBytes({ tensors: [f32Tensor('a', [8]), f32Tensor('b', [8], { offset: 32 })] })).size, 2);
});
