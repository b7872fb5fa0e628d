// Every call reads its tensors once, when it is made (issue 34): the caller may reuse, shrink,
// grow or transfer an array right after the call, or from a later tensor's getter while the call
// checks its arguments, and the call computes on the values it checked, or refuses with a typed
// error naming the argument. Each case failed on 1aa1392 (wrong values, an untyped TypeError, a
// module whose weights were wiped).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MultiHeadAttention, scaledDotProductAttention, selfAttention, KvCache, CacheError, ShapeError, StateDictError,
} from '#webattention';
import { filled, seededStateDict } from '../contract/random.mjs';
import { sameBits } from '../contract/compare.mjs';

const detach = (array) => structuredClone(array.buffer, { transfer: [array.buffer] });
const tensor = (data, shape) => ({ data, shape });
/** A Float32Array holding `values` on a resizable ArrayBuffer that may shrink to 0 bytes. */
function resizable(values) {
  const buffer = new ArrayBuffer(values.length * 4, { maxByteLength: values.length * 4 });
  const array = new Float32Array(buffer, 0, values.length);
  array.set(values);
  return array;
}

test('selfAttention() calls on one reused buffer each compute on the values it held at the call', async () => {
  const buffer = new Float32Array(1);
  const calls = [1, 2, 3].map((v) => {
    buffer[0] = v;
    return selfAttention(tensor(buffer, [1, 1]));
  });
  assert.deepEqual((await Promise.all(calls)).map((r) => r.output.data[0]), [1, 2, 3]);
});

test('scaledDotProductAttention(): an input transferred, or its resizable buffer shrunk, right after the call changes nothing', async () => {
  const values = filled(4 * 8, 5);
  const expected = (await scaledDotProductAttention(tensor(values, [4, 8]), tensor(values, [4, 8]), tensor(values, [4, 8]))).output.data;
  for (const [what, spoil] of [['transferred', detach], ['shrunk', (a) => a.buffer.resize(0)]]) {
    const q = resizable(values);
    const call = scaledDotProductAttention(tensor(q, [4, 8]), tensor(values, [4, 8]), tensor(values, [4, 8]));
    spoil(q);
    assert.ok(sameBits((await call).output.data, expected), what);
  }
});

// A later argument's `shape` getter that spoils an earlier, already checked argument's buffer.
const spoilingGetter = (data, shape, spoil) => ({ data, get shape() { spoil(); return shape; } });

test("a later tensor's shape getter that shrinks, grows or transfers an earlier, checked one: sdpa and forward compute on what was checked", async () => {
  const values = filled(2 * 3 * 8, 9);
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1 });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 3));
    const plain = () => tensor(values.slice(), [2, 3, 8]);
    const expectedSdpa = (await scaledDotProductAttention(plain(), plain(), plain())).output.data;
    const expectedMha = (await mha.forward(plain(), plain(), plain())).output.data;
    for (const [what, spoil] of [['shrunk', (a) => a.buffer.resize(0)], ['transferred', detach]]) {
      let q = resizable(values);
      const sdpa = await scaledDotProductAttention(tensor(q, [2, 3, 8]), spoilingGetter(values, [2, 3, 8], () => spoil(q)), plain());
      assert.ok(sameBits(sdpa.output.data, expectedSdpa), `sdpa, ${what}`);
      q = resizable(values);
      const mhaOut = await mha.forward(tensor(q, [2, 3, 8]), plain(), spoilingGetter(values, [2, 3, 8], () => spoil(q)));
      assert.ok(sameBits(mhaOut.output.data, expectedMha), `forward, ${what}`);
    }
    // A view already past the end of its shrunk buffer is refused; a growable shared buffer grown
    // by a later getter is read at the length it had.
    const past = resizable(filled(8, 1));
    past.buffer.resize(8);
    await assert.rejects(() => selfAttention(tensor(past, [4, 2])), (e) => e instanceof ShapeError && e.argument === 'x');
    const shared = new SharedArrayBuffer(16, { maxByteLength: 64 });
    const tracking = new Float32Array(shared);  // its length follows the buffer
    tracking.set([1, 0, 0, 1]);
    const k = spoilingGetter(new Float32Array([1, 0, 0, 1]), [2, 2], () => shared.grow(64));
    const { output } = await scaledDotProductAttention(tensor(tracking, [2, 2]), k, k);
    assert.deepEqual(output.shape, [2, 2]);
  } finally {
    mha.dispose();
  }
});

/** A module with seeded weights loaded. */
async function loaded(weightsDtype) {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1, weightsDtype });
  mha.loadStateDict(seededStateDict(mha.stateDictShapes, 1));
  return mha;
}
const x = tensor(filled(2 * 3 * 8, 4), [2, 3, 8]);

for (const weightsDtype of ['float32', 'int8']) {
  // The state dict is read once every getter has run (no copy of the weights is made: the load
  // reads them before returning): what a getter did to an earlier entry is what is loaded, or a
  // typed error naming that entry, with the module's weights as they were; never a load that
  // breaks part-way.
  test(`${weightsDtype}: a later entry's getter that transfers an earlier, checked entry, or writes a NaN into it, cannot break the load`, async () => {
    const mha = await loaded(weightsDtype);
    try {
      const sd = seededStateDict(mha.stateDictShapes, 2);
      mha.loadStateDict(sd);
      const expected = (await mha.forward(x, x, x)).output.data;
      const spoiled = (spoil) => {
        const fresh = seededStateDict(mha.stateDictShapes, 2);
        const first = fresh.in_proj_weight.data;
        const last = fresh['out_proj.bias'];
        // A Map: its entries are read as each is checked, after in_proj_weight's check.
        return new Map(Object.entries({ ...fresh, 'out_proj.bias': spoilingGetter(last.data, last.shape, () => spoil(first)) }));
      };
      assert.throws(() => mha.loadStateDict(spoiled(detach)),
        (e) => e instanceof StateDictError && e.argument === 'in_proj_weight' && /detached/.test(e.message), 'transferred');
      assert.ok(sameBits((await mha.forward(x, x, x)).output.data, expected), 'the weights as they were');
      const nan = spoiled((a) => a.fill(NaN));
      if (weightsDtype === 'int8') {
        assert.throws(() => mha.loadStateDict(nan), (e) => e instanceof StateDictError && e.argument === 'in_proj_weight', 'NaN');
        assert.ok(sameBits((await mha.forward(x, x, x)).output.data, expected), 'the weights as they were');
      } else {
        mha.loadStateDict(nan);  // float32 weights may be NaN: the NaN is what the getter left
        assert.ok((await mha.forward(x, x, x)).output.data.every(Number.isNaN), 'the NaN weights loaded, read once');
      }
    } finally {
      mha.dispose();
    }
  });
}

test('loadStateDict(): Map keys that are not strings, a bare detached Float32Array, getter errors: typed or passed through, the module unchanged', async () => {
  const mha = await loaded('float32');
  try {
    const before = (await mha.forward(x, x, x)).output.data;
    const sd = () => new Map(Object.entries(seededStateDict(mha.stateDictShapes, 7)));
    for (const key of [1, Symbol('w')]) {
      assert.throws(() => mha.loadStateDict(sd().set(key, new Float32Array(1))),
        (e) => e instanceof StateDictError && e.argument === 'stateDict' && e.message.includes(String(key)), String(key));
    }
    const detached = sd();
    detached.set('out_proj.bias', new Float32Array(8));
    detach(detached.get('out_proj.bias'));
    assert.throws(() => mha.loadStateDict(detached),
      (e) => e instanceof StateDictError && e.argument === 'out_proj.bias' && /detached/.test(e.message));
    const own = new RangeError('from the getter');
    for (const thrown of [own, null, 'text']) {
      const bad = sd().set('out_proj.bias', { data: new Float32Array(8), get shape() { throw thrown; } });
      assert.throws(() => mha.loadStateDict(bad), (e) => e === thrown, String(thrown));
    }
    assert.ok(sameBits((await mha.forward(x, x, x)).output.data, before));
  } finally {
    mha.dispose();
  }
});

test('new KvCache() from outside is a CacheError (its storage comes from mha.createCache())', () => {
  assert.throws(() => new KvCache(), (e) => e instanceof CacheError && e.argument === 'KvCache');
  assert.throws(() => new (class extends KvCache {})(), CacheError);
});

// forward() borrows plain (fixed, unshared) arrays instead of copying them (plans.js): the calling
// thread's WASM reads them before the call returns, once every getter ran. A later getter that
// transfers one is a typed error naming it; changes after the call never reach it, also where the
// call runs later (threads: 2, its workers still starting: it owns copies taken at the call).
for (const threads of [1, 2]) {
  test(`threads: ${threads}: forward() on plain arrays: transferred by a later getter is a ShapeError; changed after the call, unchanged`, async () => {
    const values = filled(2 * 3 * 8, 9);
    const reference = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1 });
    const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads });
    try {
      const plain = () => tensor(values.slice(), [2, 3, 8]);
      reference.loadStateDict(seededStateDict(reference.stateDictShapes, 3));
      const expected = (await reference.forward(plain(), plain(), plain())).output.data;
      mha.loadStateDict(seededStateDict(mha.stateDictShapes, 3));
      const q = values.slice();
      await assert.rejects(mha.forward(tensor(q, [2, 3, 8]), plain(), spoilingGetter(values, [2, 3, 8], () => detach(q))),
        (e) => e instanceof ShapeError && e.argument === 'query' && /detached/.test(e.message));
      const [a, b, c] = [values.slice(), values.slice(), values.slice()];
      const call = mha.forward(tensor(a, [2, 3, 8]), tensor(b, [2, 3, 8]), tensor(c, [2, 3, 8]));
      for (const x of [a, b, c]) x.fill(NaN);
      detach(b);
      assert.ok(sameBits((await call).output.data, expected));
    } finally {
      mha.dispose();
      reference.dispose();
    }
  });
}

// scaledDotProductAttention() waits for the core before it computes: its mask is copied at the call.
test('scaledDotProductAttention(): an attnMask changed right after the call changes nothing', async () => {
  const values = filled(4 * 8, 5);
  const q = () => tensor(values.slice(), [4, 8]);
  const mask = () => ({ data: new Float32Array(16), shape: [4, 4] });
  const expected = (await scaledDotProductAttention(q(), q(), q(), { attnMask: mask() })).output.data;
  const attnMask = mask();
  const call = scaledDotProductAttention(q(), q(), q(), { attnMask });
  attnMask.data.fill(NaN);
  assert.ok(sameBits((await call).output.data, expected));
});

test('forward(x, x, x): one tensor object passed three times is read once (each getter runs once), the result unchanged', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1 });
  try {
    mha.loadStateDict(seededStateDict(mha.stateDictShapes, 5));
    const values = filled(3 * 8, 4);
    const expected = (await mha.forward(tensor(values, [1, 3, 8]), tensor(values, [1, 3, 8]), tensor(values, [1, 3, 8]))).output.data;
    const reads = { data: 0, shape: 0 };
    const x = { get data() { reads.data += 1; return values; }, get shape() { reads.shape += 1; return [1, 3, 8]; } };
    assert.ok(sameBits((await mha.forward(x, x, x)).output.data, expected));
    assert.deepEqual(reads, { data: 1, shape: 1 });
  } finally {
    mha.dispose();
  }
});
