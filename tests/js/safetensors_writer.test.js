// saveSafetensors(): files loadSafetensors() reads back bit for bit (the PyTorch-written fixtures
// round-tripped, F16 and BF16 bits kept), the reference writer's layout (header padded to 8 bytes,
// F32 data aligned), and bad input as typed errors naming the argument.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DTypeError, ShapeError, OptionError, loadSafetensors, saveSafetensors } from '#webattention';
import { fixtureBytes } from './safetensors_files.js';

const sameTensors = (a, b) => {
  assert.deepEqual([...a.keys()].sort(), [...b.keys()].sort());
  for (const [name, t] of a) {
    const u = b.get(name);
    assert.deepEqual([u.shape, u.dtype, u.data.constructor.name], [t.shape, t.dtype, t.data.constructor.name], name);
    // Bits, not values: NaN payloads and -0 must survive.
    const bits = (x) => new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
    assert.deepEqual(bits(u.data), bits(t.data), name);
  }
};

for (const name of ['dtypes.safetensors', 'encoder_layer.safetensors']) {
  test(`${name} (PyTorch-written) saved again reads back bit for bit, metadata included`, () => {
    const file = loadSafetensors(fixtureBytes(name), { convert: false });
    const tensors = new Map([...file].map(([k, t]) => [k, { data: t.data, shape: t.shape, dtype: t.dtype }]));
    const again = loadSafetensors(saveSafetensors(tensors, { metadata: file.metadata }), { convert: false });
    sameTensors(file, again);
    assert.deepEqual([...again.metadata], [...file.metadata]);
  });
}

test('layout: 8-byte length, header padded with spaces to 8 bytes, F32 tensors first and viewed in place', () => {
  const bytes = saveSafetensors({
    h: { data: new Uint16Array([0x3c00]), shape: [1], dtype: 'float16' },  // 2 bytes: would misalign a later F32
    w: { data: new Float32Array([1, -2, 3, 0.5, 7, 8]), shape: [2, 3] },
  }, { metadata: { format: 'pt' } });
  const length = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal(length % 8, 0);
  const header = new TextDecoder().decode(bytes.subarray(8, 8 + length));
  assert.match(header, /^\{.*\} *$/);
  assert.deepEqual(JSON.parse(header), {
    __metadata__: { format: 'pt' },
    w: { dtype: 'F32', shape: [2, 3], data_offsets: [0, 24] },
    h: { dtype: 'F16', shape: [1], data_offsets: [24, 26] },
  });
  const file = loadSafetensors(bytes);
  assert.equal(file.get('w').data.buffer, bytes.buffer, 'aligned F32: a view on the bytes');
  assert.deepEqual([...file.get('w').data], [1, -2, 3, 0.5, 7, 8]);
  assert.deepEqual([...file.get('h').data], [1]);
  assert.deepEqual(loadSafetensors(saveSafetensors(new Map())).size, 0, 'no tensors: a valid empty file');
});

test('tensors as forward() takes them: { data, dims } tensors, bfloat16 bits, views into a larger buffer', () => {
  const big = new Float32Array([9, 1, 2, 3, 9]);
  const file = loadSafetensors(saveSafetensors({
    ort: { data: new Float32Array([4, 5]), dims: [2], type: 'float32' },
    bf: { data: new Uint16Array([0x3f80, 0xc000]), shape: [2], dtype: 'bfloat16' },
    view: { data: big.subarray(1, 4), shape: [3] },
  }));
  assert.deepEqual([...file].map(([k, t]) => [k, t.dtype, [...t.data]]), [['ort', 'F32', [4, 5]], ['view', 'F32', [1, 2, 3]], ['bf', 'BF16', [1, -2]]]);
});

test('bad input: typed errors naming the argument', () => {
  const t = { data: new Float32Array(4), shape: [2, 2] };
  const cases = [
    [() => saveSafetensors([t]), DTypeError, /tensors: expected a Map or a plain object/],
    [() => saveSafetensors(null), DTypeError, /tensors: expected a Map or a plain object/],
    [() => saveSafetensors({ __metadata__: t }), DTypeError, /tensor name must be a non-empty string/],
    [() => saveSafetensors(new Map([[1, t]])), DTypeError, /tensor name must be a non-empty string other than '__metadata__', got number 1/],
    [() => saveSafetensors({ w: { data: new Float64Array(4), shape: [2, 2] } }), DTypeError, /tensors\["w"\]\.data: expected Float32Array/],
    [() => saveSafetensors({ w: { data: new Uint16Array(4), shape: [4] } }), DTypeError, /tensors\["w"\]\.dtype/],
    [() => saveSafetensors({ w: { data: new Float32Array(4), shape: [3] } }), ShapeError, /tensors\["w"\]: shape \[3\] needs 3 values, data has 4/],
    [() => saveSafetensors({ w: t }, { metadata: { n: 1 } }), DTypeError, /metadata\["n"\]: expected a string, got/],
    [() => saveSafetensors({ w: t }, { meta: {} }), OptionError, /unknown option 'meta'/],
  ];
  for (const [call, Type, message] of cases) {
    assert.throws(call, (e) => e instanceof Type && message.test(e.message), String(call));
  }
});
