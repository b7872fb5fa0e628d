// Hostile and broken .safetensors files: each must throw the typed error that names its problem
// (class, `argument` and the words of the message), never another exception, a wrong tensor or a
// hang. The same table is printed in the report of issue 11.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadSafetensors, DTypeError, SafetensorsError, WebAttentionError } from '#webattention';
import { entry, f32Bytes, safetensorsBytes, validFile } from './safetensors_files.js';

const valid = validFile();
const f32 = (n) => f32Bytes(new Array(n).fill(1));
const header = (h, data) => safetensorsBytes(h, data);
const text = (t, data) => safetensorsBytes(t, data);
const utf8 = (...bytes) => safetensorsBytes(new Uint8Array([0x7b, 0x22, ...bytes, 0x22, 0x3a, 0x7b, 0x7d, 0x7d])); // {"…":{}}
const W = (dtype, shape, begin, end) => ({ w: entry(dtype, shape, begin, end) });

// [case, bytes, error class, argument, parts of the message]
const CASES = [
  ['empty file', new Uint8Array(0), SafetensorsError, 'file', ['0 bytes, too short for the 8-byte header length']],
  ['7 bytes', new Uint8Array(7), SafetensorsError, 'file', ['7 bytes, too short']],
  ['truncated in the header', valid.subarray(0, 20), SafetensorsError, 'header length', ['past the end of the file (12 bytes follow']],
  ['truncated in the data', valid.subarray(0, valid.length - 1), SafetensorsError, 'tensor "d" data_offsets', ['[18, 24] run past the end of the data (23 bytes)']],
  ['header length 2^64 − 1', safetensorsBytes({}, undefined, { length: 2n ** 64n - 1n }), SafetensorsError, 'header length',
    ['18446744073709551615 bytes, over the 100000000-byte limit']],
  ['header length 2^32 (low half 0)', safetensorsBytes({}, undefined, { length: 2n ** 32n }), SafetensorsError, 'header length',
    ['4294967296 bytes, over the 100000000-byte limit']],
  ['header length 2^32 + 2 (low half fits)', safetensorsBytes({}, undefined, { length: 2n ** 32n + 2n }), SafetensorsError, 'header length',
    ['4294967298 bytes, over']],
  ['header length 100000001', safetensorsBytes({}, undefined, { length: 100_000_001 }), SafetensorsError, 'header length', ['100000001 bytes, over']],
  ['header length 100000000, file shorter', safetensorsBytes({}, undefined, { length: 100_000_000 }), SafetensorsError, 'header length',
    ['100000000 bytes, past the end of the file (2 bytes follow the length)']],
  ['header past the end', safetensorsBytes({}, undefined, { length: 3 }), SafetensorsError, 'header length', ['3 bytes, past the end']],
  ['invalid UTF-8: 0xff', utf8(0xff), SafetensorsError, 'header', ['not valid UTF-8']],
  ['invalid UTF-8: overlong "/"', utf8(0xc0, 0xaf), SafetensorsError, 'header', ['not valid UTF-8']],
  ['invalid UTF-8: surrogate half', utf8(0xed, 0xa0, 0x80), SafetensorsError, 'header', ['not valid UTF-8']],
  ['invalid UTF-8: cut sequence', utf8(0xe2, 0x82), SafetensorsError, 'header', ['not valid UTF-8']],
  ['byte-order mark', text('\ufeff{}'), SafetensorsError, 'header', ["expected a JSON object starting with '{', got \"\\ufeff{}\""]],
  ['empty header', text(''), SafetensorsError, 'header', ['an empty header']],
  ['JSON array', text('[]'), SafetensorsError, 'header', ["starting with '{', got \"[]\""]],
  ['JSON string', text('"w"'), SafetensorsError, 'header', ["starting with '{'"]],
  ['JSON null', text('null'), SafetensorsError, 'header', ["starting with '{'"]],
  ['leading space', text(' {}'), SafetensorsError, 'header', ["starting with '{'"]],
  ['not JSON', text('{"w":'), SafetensorsError, 'header', ['not valid JSON']],
  ['trailing text', text('{} x'), SafetensorsError, 'header', ['not valid JSON']],
  ['duplicate tensor name', text('{"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', f32(1)),
    SafetensorsError, 'header', ['duplicate key "w" at the top level']],
  ['duplicate name spelled with an escape', text('{"w":{},"\\u0077":{}}'), SafetensorsError, 'header', ['duplicate key "w" at the top level']],
  ['a name with a lone surrogate escape', text('{"\\ud800":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', f32(1)), SafetensorsError, 'header',
    ['string "\\ud800" at the top level escapes a lone surrogate']],
  ['a low surrogate alone in a dtype', text('{"w":{"dtype":"F3\\udc002","shape":[1],"data_offsets":[0,4]}}', f32(1)), SafetensorsError, 'header',
    ['escapes a lone surrogate']],
  ['a high surrogate before a letter in metadata', text('{"__metadata__":{"a":"\\ud800\\u0041"}}'), SafetensorsError, 'header', ['escapes a lone surrogate']],
  ['duplicate __metadata__', text('{"__metadata__":{},"__metadata__":{}}'), SafetensorsError, 'header', ['duplicate key "__metadata__"']],
  ['duplicate key inside an entry', text('{"w":{"dtype":"F32","dtype":"F16","shape":[],"data_offsets":[0,4]}}', f32(1)),
    SafetensorsError, 'header', ['duplicate key "dtype" in the entry "w"']],
  ['duplicate key inside the metadata', text('{"__metadata__":{"a":"1","a":"2"}}'), SafetensorsError, 'header',
    ['duplicate key "a" in the entry "__metadata__"']],
  ['metadata value a number', header({ __metadata__: { a: 1 } }), SafetensorsError, '__metadata__["a"]', ['expected a string, got number 1']],
  ['metadata value an object', header({ __metadata__: { a: {} } }), SafetensorsError, '__metadata__["a"]', ['expected a string, got Object']],
  ['metadata a string', header({ __metadata__: 'pt' }), SafetensorsError, '__metadata__', ['expected an object of strings, got string "pt"']],
  ['metadata null', header({ __metadata__: null }), SafetensorsError, '__metadata__', ['expected an object of strings, got null']],
  ['metadata an array', header({ __metadata__: ['pt'] }), SafetensorsError, '__metadata__', ['expected an object of strings, got Array(1)']],
  ['entry a number', header({ w: 1 }), SafetensorsError, 'tensor "w"', ['expected an object { dtype, shape, data_offsets }, got number 1']],
  ['entry an array', header({ w: [] }), SafetensorsError, 'tensor "w"', ['got Array(0)']],
  ['entry with another key', header({ w: { ...entry('F32', [1], 0, 4), offset: 0 } }, f32(1)), SafetensorsError, 'tensor "w"',
    ['unexpected key "offset"; expected dtype, shape, data_offsets']],
  ['entry without data_offsets', header({ w: { dtype: 'F32', shape: [1] } }, f32(1)), SafetensorsError, 'tensor "w"', ["missing key 'data_offsets'"]],
  ['entry without dtype', header({ w: { shape: [1], data_offsets: [0, 4] } }, f32(1)), SafetensorsError, 'tensor "w"', ["missing key 'dtype'"]],
  ['dtype I64 (not supported)', header(W('I64', [1], 0, 8), f32(2)), SafetensorsError, 'tensor "w" dtype', ['"I64" is not supported; expected F32, F16, BF16']],
  ['dtype F64 (not supported)', header(W('F64', [1], 0, 8), f32(2)), SafetensorsError, 'tensor "w" dtype', ['"F64" is not supported']],
  ['dtype lower case', header(W('f32', [1], 0, 4), f32(1)), SafetensorsError, 'tensor "w" dtype', ['"f32" is not supported']],
  ['dtype __proto__', header(W('__proto__', [1], 0, 4), f32(1)), SafetensorsError, 'tensor "w" dtype', ['"__proto__" is not supported']],
  ['dtype toString', header(W('toString', [1], 0, 4), f32(1)), SafetensorsError, 'tensor "w" dtype', ['"toString" is not supported']],
  ['dtype a number', header(W(4, [1], 0, 4), f32(1)), SafetensorsError, 'tensor "w" dtype', ['number 4 is not supported']],
  ['shape not an array', header(W('F32', 1, 0, 4), f32(1)), SafetensorsError, 'tensor "w" shape', ['expected an array of integers in [0, 2^53 − 1], got 1']],
  ['shape with a string', header(W('F32', ['1'], 0, 4), f32(1)), SafetensorsError, 'tensor "w" shape', ['got ["1"]']],
  ['shape negative', text('{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', f32(1)), SafetensorsError, 'header',
    ['number -1 in the entry "w" → "shape": expected a non-negative integer in plain digits (no sign, fraction, exponent or leading zero)']],
  ['shape 2.0', text('{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}', f32(2)), SafetensorsError, 'header', ['number 2.0 in the entry "w" → "shape"']],
  ['shape 1e0', text('{"w":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}}', f32(1)), SafetensorsError, 'header', ['number 1e0']],
  ['shape 01', text('{"w":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}}', f32(1)), SafetensorsError, 'header', ['number 01 in the entry "w" → "shape"']],
  ['nesting deeper than a header needs', text('{"w":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}}', f32(1)), SafetensorsError, 'header',
    ['nesting deeper than 3 levels at character 29, in the entry "w" → "shape"']],
  ['10 MB of "[" (memory for JSON.parse)', text(`{"__metadata__":${'['.repeat(10_000_000)}`), SafetensorsError, 'header', ['nesting deeper than 3 levels']],
  ['shape dimension over 2^53', text('{"w":{"dtype":"F32","shape":[9007199254740993],"data_offsets":[0,4]}}', f32(1)), SafetensorsError,
    'tensor "w" shape', ['expected an array of integers in [0, 2^53 − 1], got [9007199254740992]']],
  ['shape product over 2^53 − 1', header(W('F32', [2 ** 32, 2 ** 32], 0, 4), f32(1)), SafetensorsError, 'tensor "w" shape',
    ['shape [4294967296, 4294967296] has more than 2^53 − 1 elements']],
  ['shape product overflows before a 0', header(W('F32', [2 ** 30, 2 ** 30, 2 ** 30, 0], 0, 0)), SafetensorsError, 'tensor "w" shape',
    ['has more than 2^53 − 1 elements']],
  ['shape × dtype size over 2^53 − 1', header(W('F32', [2 ** 52], 0, 4), f32(1)), SafetensorsError, 'tensor "w" data_offsets',
    ['[0, 4] hold 4 bytes; shape [4503599627370496] of F32 needs 4503599627370496 × 4']],
  ['byte count too small', header(W('F32', [2], 0, 4), f32(1)), SafetensorsError, 'tensor "w" data_offsets', ['[0, 4] hold 4 bytes; shape [2] of F32 needs 2 × 4']],
  ['byte count too large', header(W('F16', [2], 0, 8), f32(2)), SafetensorsError, 'tensor "w" data_offsets', ['hold 8 bytes; shape [2] of F16 needs 2 × 2']],
  ['scalar with 0 bytes', header(W('F32', [], 0, 0)), SafetensorsError, 'tensor "w" data_offsets', ['hold 0 bytes; shape [] of F32 needs 1 × 4']],
  ['data_offsets reversed', header(W('F32', [1], 4, 0), f32(1)), SafetensorsError, 'tensor "w" data_offsets', ['expected [begin, end], integers with 0 <= begin <= end <= 2^53 − 1, got [4,0]']],
  ['data_offsets of 3', header({ w: { dtype: 'F32', shape: [1], data_offsets: [0, 4, 4] } }, f32(1)), SafetensorsError, 'tensor "w" data_offsets', ['got [0,4,4]']],
  ['data_offsets null', header({ w: { dtype: 'F32', shape: [1], data_offsets: null } }, f32(1)), SafetensorsError, 'tensor "w" data_offsets', ['got null']],
  ['data_offsets out of range', header(W('F32', [2], 4, 12), f32(2)), SafetensorsError, 'tensor "w" data_offsets', ['[4, 12] run past the end of the data (8 bytes)']],
  ['data_offsets past 2^53', text('{"w":{"dtype":"F32","shape":[1],"data_offsets":[18446744073709551612,18446744073709551616]}}', f32(1)),
    SafetensorsError, 'tensor "w" data_offsets', ['expected [begin, end]']],
  ['overlapping tensors', header({ a: entry('F32', [2], 0, 8), b: entry('F32', [2], 4, 12) }, f32(3)), SafetensorsError, 'tensor "b" data_offsets',
    ['[4, 12] overlaps tensor "a" [0, 8]']],
  ['aliased tensors', header({ a: entry('F32', [2], 0, 8), b: entry('F32', [2], 0, 8) }, f32(2)), SafetensorsError, 'tensor "b" data_offsets',
    ['[0, 8] aliases tensor "a" [0, 8] (the same bytes)']],
  ['tensor inside another', header({ a: entry('F32', [3], 0, 12), b: entry('F32', [1], 4, 8) }, f32(3)), SafetensorsError, 'tensor "b" data_offsets',
    ['overlaps tensor "a" [0, 12]']],
  ['hole between tensors', header({ a: entry('F32', [2], 0, 8), b: entry('F32', [2], 12, 20) }, f32(5)), SafetensorsError, 'tensor "b" data_offsets',
    ['[12, 20] leaves a hole of 4 bytes at [8, 12) after tensor "a" [0, 8]']],
  ['hole at the start', header(W('F32', [2], 4, 12), f32(3)), SafetensorsError, 'tensor "w" data_offsets', ['leaves a hole of 4 bytes at [0, 4) at the start of the data']],
  ['bytes after the last tensor', header(W('F32', [2], 0, 8), f32(3)), SafetensorsError, 'data',
    ['4 bytes after the last tensor belong to none (the tensors cover [0, 8) of 12)']],
  ['no tensors, some data', header({}, f32(1)), SafetensorsError, 'data', ['4 bytes after the last tensor belong to none']],
  ['not bytes: a string', 'model.safetensors', DTypeError, 'bytes', ['expected an ArrayBuffer or a typed array of the file\'s bytes, got string']],
  ['not bytes: an array', [...valid], DTypeError, 'bytes', ['got Array(']],
  ['not bytes: null', null, DTypeError, 'bytes', ['got null']],
];

for (const [name, bytes, Class, argument, parts] of CASES) {
  test(`hostile file: ${name}`, () => {
    let error;
    try {
      loadSafetensors(bytes);
    } catch (e) {
      error = e;
    }
    assert.ok(error, 'expected an error');
    assert.ok(error instanceof Class && error instanceof WebAttentionError, `expected ${Class.name}, got ${error?.name}: ${error?.message}`);
    assert.equal(error.argument, argument);
    for (const part of parts) assert.ok(error.message.includes(part), `"${error.message}" lacks "${part}"`);
  });
}

test('the valid file the table breaks loads', () => {
  const file = loadSafetensors(valid);
  assert.deepEqual([...file.keys()], ['a', 'b', 'c', 'd']);
  assert.deepEqual([...file.get('a').data], [1.5, -2]);
  assert.deepEqual([...file.get('b').data], [1, -2, 2 ** -24]);
  assert.deepEqual([...file.get('c').data], [1, Infinity]);
  assert.deepEqual([...file.get('d').data], [Infinity, -Infinity, NaN]);
});

test('a failed load leaves nothing behind: Object.prototype is untouched', () => {
  assert.throws(() => loadSafetensors(header({ __proto__: null, ['__proto__']: { polluted: 'yes' } })), SafetensorsError);
  assert.equal({}.polluted, undefined);
  assert.equal(Object.prototype.dtype, undefined);
});

// Print the table for the note: `node tests/js/safetensors_hostile.test.js --table`.
if (process.argv.includes('--table')) {
  for (const [name, bytes] of CASES) {
    try {
      loadSafetensors(bytes);
    } catch (e) {
      console.log(`| ${name} | ${e.name} | ${e.message.replaceAll('|', '\\|')} |`);
    }
  }
}
