// saveSafetensors() refuses, before it writes anything, what loadSafetensors() would refuse, and
// whatever it accepts loads back bit for bit (issue 34). On 1aa1392 a tensor named '__proto__'
// set the header's prototype and vanished from the file, a lone surrogate in a name or in
// metadata was written and then refused on load, metadata keys 1 and '1' collided and a Symbol key
// was dropped; a detached empty array and a Float32Array tagged 'bfloat16' were not typed errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DTypeError, SafetensorsError, loadSafetensors, saveSafetensors } from '#webattention';
import { rng } from '../contract/random.mjs';

const t = (values, shape = [values.length]) => ({ data: Float32Array.from(values), shape });
const bits = (x) => Array.from(new Uint8Array(x.buffer, x.byteOffset, x.byteLength));

test("a tensor or metadata key named '__proto__' is a name like any other: it round-trips", () => {
  const back = loadSafetensors(saveSafetensors(new Map([['__proto__', t([1, 2])], ['b', t([3])]]), {
    metadata: new Map([['__proto__', 'kept']]),
  }));
  assert.deepEqual([...back.keys()].sort(), ['__proto__', 'b']);
  assert.deepEqual(Array.from(back.get('__proto__').data), [1, 2]);
  assert.equal(back.metadata.get('__proto__'), 'kept');
});

test('lone surrogates, non-string or Symbol keys, detached or mis-tagged data: typed errors naming the argument', () => {
  const lone = 'w\uD800';
  const cases = [
    [() => saveSafetensors({ [lone]: t([1]) }), SafetensorsError, 'tensors'],
    [() => saveSafetensors({ a: t([1]) }, { metadata: { note: lone } }), SafetensorsError, 'metadata'],
    [() => saveSafetensors({ a: t([1]) }, { metadata: { [lone]: 'x' } }), SafetensorsError, 'metadata'],
    [() => saveSafetensors({ a: t([1]) }, { metadata: new Map([[1, 'x'], ['1', 'y']]) }), DTypeError, 'metadata'],
    [() => saveSafetensors({ a: t([1]) }, { metadata: { [Symbol('s')]: 'x' } }), DTypeError, 'metadata'],
    [() => saveSafetensors({ a: t([1]), [Symbol('s')]: t([2]) }), DTypeError, 'tensors'],
    [() => saveSafetensors({ a: { data: new Float32Array(2), shape: [2], dtype: 'bfloat16' } }), DTypeError, 'tensors["a"]'],
  ];
  for (const [call, Class, argument] of cases) {
    assert.throws(call, (e) => e instanceof Class && e.argument === argument, call.toString());
  }
  const empty = new Float32Array(0);
  structuredClone(empty.buffer, { transfer: [empty.buffer] });
  assert.deepEqual(loadSafetensors(saveSafetensors({ e: { data: empty, shape: [0] } })).get('e').shape, [0]);
});

// Random names (any UTF-16 text, surrogates included), metadata and float32 / 16-bit bits.
function randomCase(next) {
  const text = () => String.fromCharCode(...Array.from({ length: 1 + Math.floor(next() * 4) }, () => {
    const r = next();
    return r < 0.04 ? 0xd800 + Math.floor(next() * 0x800) : r < 0.5 ? Math.floor(next() * 0x80) : Math.floor(next() * 0xffff);
  }));
  const tensors = new Map();
  for (let i = 0, n = 1 + Math.floor(next() * 4); i < n; i++) {
    const length = Math.floor(next() * 5);
    const raw = Uint32Array.from({ length }, () => Math.floor(next() * 2 ** 32));
    const half = next() < 0.3;
    tensors.set(text(), half ? { data: new Uint16Array(raw.buffer, 0, length), shape: [length], dtype: 'bfloat16' }
      : { data: new Float32Array(raw.buffer), shape: [length] });
  }
  const metadata = new Map(Array.from({ length: Math.floor(next() * 3) }, () => [text(), text()]));
  return { tensors, metadata };
}

test('property: whatever saveSafetensors() accepts, loadSafetensors() reads back bit for bit; what it refuses is a typed error', () => {
  const lcg = rng(34);
  const next = () => lcg() + 0.5;  // [0, 1)
  let saved = 0;
  for (let i = 0; i < 400; i++) {
    const { tensors, metadata } = randomCase(next);
    let bytes;
    try {
      bytes = saveSafetensors(tensors, { metadata });
    } catch (e) {
      assert.ok(e instanceof SafetensorsError || e instanceof DTypeError, `${e?.name}: ${e?.message}`);
      continue;
    }
    const back = loadSafetensors(bytes, { convert: false });
    assert.deepEqual([...back.keys()].sort(), [...tensors.keys()].sort());
    for (const [name, tensor] of tensors) assert.deepEqual(bits(back.get(name).data), bits(tensor.data), JSON.stringify(name));
    assert.deepEqual([...back.metadata].sort(), [...metadata].sort());
    saved += 1;
  }
  assert.ok(saved > 50, `only ${saved} of 400 cases saved`);
});
