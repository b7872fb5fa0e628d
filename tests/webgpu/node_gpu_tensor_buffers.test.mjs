// What a GPU tensor's buffer may be (docs/webgpu/tensors.md#tensors-on-the-gpu): STORAGE alone (bound as
// it is) or COPY_SRC alone (copied), tensors at a byteOffset of a shared buffer (float32 and
// float16); and hostile ones, each a typed error naming the argument with the module usable
// afterwards: too small, wrong shape or dtype, not a buffer or an impostor of one, without usable usage, bad offsets,
// mapped, of another device, destroyed (before or after the call), on a cache, the device lost
// mid-call, before loadStateDict(); GpuTensor's dispose() and read() after it. Set-up: node_setup.mjs.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { roundToHalf } from '../internals.mjs';
import { adapterName, captureWarnings, device, freshDevice, randomStateDict, seededModules } from './node_setup.mjs';
import { COPY_DST, COPY_SRC, E, STORAGE, create, gpuTensor, host, onGpu } from './gpu_tensor_inputs.mjs';

const { modules, module } = seededModules({ ...create });

describe(`GPU-resident tensors, hostile inputs (Dawn, ${adapterName})`, () => {
  let mha;
  let q;
  let expected;
  before(async () => {
    mha = await module({}, 71);
    q = host(4, 72);
    expected = (await mha.forward(q, q, q)).output.data;
  });
  const stillWorks = async () => {
    const g = onGpu(q);
    const r = await mha.forward(g, g, g, { output: 'gpu-buffer' });
    assert.deepEqual(await r.output.read(), expected);
    r.output.dispose();
    g.gpuBuffer.destroy();
  };

  const synchronous = [
    ['too small', () => ({ ...onGpu(q), shape: [1, 5, E] }), 'ShapeError', 'query'],
    ['wrong shape', () => ({ ...onGpu(q), shape: [1, 4, E / 2] }), 'ShapeError', 'query'],
    ['dtype bfloat16', () => ({ ...onGpu(q), dtype: 'bfloat16' }), 'DTypeError', 'query'],
    ['not a buffer', () => ({ gpuBuffer: new Float32Array(4), shape: [1, 4, E] }), 'DTypeError', 'query'],
    ['without STORAGE or COPY_SRC', () => gpuTensor(q.data, q.shape, { usage: COPY_DST }), 'DTypeError', 'query'],
    ['byteOffset not a multiple of 4', () => ({ ...onGpu(q), byteOffset: 2 }), 'ShapeError', 'query'],
    ['byteOffset negative', () => ({ ...onGpu(q), byteOffset: -4 }), 'ShapeError', 'query'],
    ['byteOffset a string', () => ({ ...onGpu(q), byteOffset: '4' }), 'ShapeError', 'query'],
    ['byteOffset past the room the shape needs', () => ({ ...onGpu(q), byteOffset: 4 }), 'ShapeError', 'query'],
    ['byteOffset on a STORAGE-only buffer', () => ({ ...gpuTensor(q.data, q.shape, { usage: STORAGE }), byteOffset: 0x100, shape: [1, 2, E] }), 'DTypeError', 'query'],
  ];
  for (const [what, make, name, argument] of synchronous) {
    test(`${what}: ${name} naming ${argument}, the module usable afterwards`, async () => {
      const bad = make();
      await assert.rejects(mha.forward(bad, q, q, { output: 'gpu-buffer' }), (e) => {
        assert.equal(e.name, name);
        assert.equal(e.argument, argument);
        assert.ok(e.expected !== undefined && e.actual !== undefined);
        return true;
      });
      bad.gpuBuffer.destroy?.();
      await stillWorks();
    });
  }

  test('byteOffset: query, key and value at offsets of one buffer (float32, and float16 bits) give the separate tensors\' values', async () => {
    const [k, v] = [host(6, 73), host(6, 74)];
    const want = (await mha.forward(q, k, v, { needWeights: true })).output.data;
    // [pad 16 B][query][key][value] in one buffer; the pad moves every tensor off byte 0.
    const parts = [q.data, k.data, v.data];
    const packed = new Float32Array(4 + parts.reduce((n, p) => n + p.length, 0));
    let at = 4;
    const offsets = parts.map((p) => { packed.set(p, at); at += p.length; return (at - p.length) * 4; });
    const one = gpuTensor(packed, [packed.length]).gpuBuffer;
    const [tq, tk, tv] = [q, k, v].map((t, i) => ({ gpuBuffer: one, shape: t.shape, byteOffset: offsets[i] }));
    const got = await mha.forward(tq, tk, tv, { output: 'gpu-buffer' });
    assert.deepEqual(await got.output.read(), want);
    // The same view passed twice is one input; another offset of the buffer is another.
    const self = await mha.forward(tk, tk, tk, { output: 'gpu-buffer' });
    assert.deepEqual(await self.output.read(), (await mha.forward(k, k, k)).output.data);
    // float16 bits at a word offset: the same as the host float16 call.
    const bits = roundToHalf('float16', q.data);
    const halfBuffer = device.createBuffer({ size: 8 + bits.byteLength, usage: COPY_SRC | COPY_DST });
    device.queue.writeBuffer(halfBuffer, 8, bits);
    const half = { gpuBuffer: halfBuffer, shape: q.shape, dtype: 'float16', byteOffset: 8 };
    const hostHalf = { data: bits, shape: q.shape, dtype: 'float16' };
    const fromHalf = await mha.forward(half, half, half);
    assert.deepEqual(fromHalf.output.data, (await mha.forward(hostHalf, hostHalf, hostHalf)).output.data);
    for (const t of [got.output, self.output]) t.dispose();
    for (const b of [one, halfBuffer]) b.destroy();
  });

  // Each passes a duck-typed look (or throws reading it), and npm webgpu crashed the process on the
  // first WebGPU call that took the read-through Proxy or the object on the prototype.
  test('impostors of a GPUBuffer (Proxies, an object on its prototype, a look-alike): DTypeError naming the argument, in forward() and encode()', async () => {
    const real = onGpu(q).gpuBuffer;
    const readThrough = new Proxy(real, {
      get: (target, key) => {
        const value = Reflect.get(target, key, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const onPrototype = Object.create(Object.getPrototypeOf(real), { size: { value: real.size }, usage: { value: real.usage }, mapState: { value: 'unmapped' } });
    const lookAlike = { destroy() {}, mapAsync() {}, size: real.size, usage: real.usage, mapState: 'unmapped' };
    const impostors = [['a Proxy', new Proxy(real, {})], ['a read-through Proxy', readThrough], ['an object on its prototype', onPrototype], ['a look-alike', lookAlike]];
    for (const [what, gpuBuffer] of impostors) {
      const named = (argument) => (e) => e.name === 'DTypeError' && e.argument === argument && e.expected === 'GPUBuffer';
      await assert.rejects(mha.forward({ gpuBuffer, shape: q.shape }, q, q, { output: 'gpu-buffer' }), named('query'), what);
      await assert.rejects(mha.forward(onGpu(q), { gpuBuffer, shape: q.shape }, onGpu(q)), named('key'), what);
      await assert.rejects(mha.encode({ gpuBuffer, shape: q.shape }, onGpu(q)), named('key'), `${what}: encode()`);
      await stillWorks();
    }
    real.destroy();
  });

  test('a buffer with STORAGE alone (bound as it is) or COPY_SRC alone (copied): the same values', async () => {
    for (const usage of [STORAGE, COPY_SRC]) {
      const g = gpuTensor(q.data, q.shape, { usage });
      const r = await mha.forward(g, g, g, { output: 'gpu-buffer' });
      assert.deepEqual(await r.output.read(), expected, `usage ${usage}`);
      r.output.dispose();
      g.gpuBuffer.destroy();
    }
  });

  test('a mapped buffer: DTypeError', async () => {
    const g = device.createBuffer({ size: q.data.byteLength, usage: STORAGE | COPY_SRC, mappedAtCreation: true });
    await assert.rejects(mha.forward(q, { gpuBuffer: g, shape: q.shape }, q), { name: 'DTypeError', argument: 'key' });
    g.destroy();
    await stillWorks();
  });

  test('a buffer of another device: BackendError naming the argument', async () => {
    const other = await freshDevice();
    const g = gpuTensor(q.data, q.shape, { on: other });
    const ours = onGpu(q);  // a good GPU input before it: the error names the one WebGPU refused
    await assert.rejects(mha.forward(ours, q, g, { output: 'gpu-buffer' }), { name: 'BackendError', argument: 'value' });
    await assert.rejects(mha.forward(ours, ours, g), { name: 'BackendError', argument: 'value' });
    other.destroy();
    ours.gpuBuffer.destroy();
    await stillWorks();
  });

  test('a destroyed buffer, and one destroyed after the call was made: BackendError (never garbage)', async () => {
    const g = onGpu(q);
    g.gpuBuffer.destroy();
    await assert.rejects(mha.forward(g, q, q), { name: 'BackendError', argument: 'query' });
    const late = onGpu(q);
    const call = mha.forward(late, late, late, { output: 'gpu-buffer' });
    late.gpuBuffer.destroy();
    await assert.rejects(call, { name: 'BackendError', argument: 'query' });
    await stillWorks();
  });

  test('a cached call on a destroyed buffer: BackendError naming it, the cache unchanged and usable', async () => {
    const cache = mha.createCache({ maxLength: 8 });
    const row = host(1, 81);
    await mha.forward(row, row, row, { cache });
    const g = onGpu(row);
    g.gpuBuffer.destroy();
    await assert.rejects(mha.forward(g, g, g, { cache }), { name: 'BackendError', argument: 'query' });
    assert.equal(cache.length, 1);
    const next = onGpu(host(1, 82));
    const r = await mha.forward(next, next, next, { cache, output: 'gpu-buffer' });
    assert.equal(cache.length, 2);
    assert.deepEqual(r.output.shape, [1, 1, E]);
    r.output.dispose();
    next.gpuBuffer.destroy();
    cache.dispose();
  });

  test('the device lost during a GPU-tensor call: the right values or a BackendError; then an OptionError, host calls on WASM', async () => {
    const lost = await freshDevice();
    const m = await MultiHeadAttention.create({ ...create, gpu: lost });
    modules.push(m);
    m.loadStateDict(randomStateDict(m.stateDictShapes, 71));
    const g = gpuTensor(q.data, q.shape, { on: lost });
    const { warnings } = await captureWarnings(async () => {
      const call = m.forward(g, g, g);
      lost.destroy();
      await call.then((r) => assert.deepEqual(r.output.data, expected), (e) => assert.equal(e.name, 'BackendError'));
      await assert.rejects(m.forward(g, g, g), { name: 'OptionError', argument: 'query' });
      assert.equal(m.backend, 'wasm');
      assert.equal(m.gpuDevice, null);
      const r = await m.forward(q, q, q);
      r.output.data.forEach((x, i) => assert.ok(Math.abs(x - expected[i]) < 1e-4, `element ${i}`));
    });
    assert.ok(warnings.length <= 1 && warnings.every((w) => /device was lost/.test(w)), JSON.stringify(warnings));
  });

  test('before loadStateDict(): a StateDictError, then the call runs once loaded', async () => {
    const bare = await MultiHeadAttention.create({ ...create, gpu: device });
    modules.push(bare);
    const g = onGpu(q);
    await assert.rejects(bare.forward(g, g, g), { name: 'StateDictError' });
    await assert.rejects(bare.forward(q, q, q, { output: 'gpu-buffer' }), { name: 'StateDictError' });
    bare.loadStateDict(randomStateDict(bare.stateDictShapes, 71));
    assert.deepEqual((await bare.forward(g, g, g)).output.data, expected);
    g.gpuBuffer.destroy();
  });

  test('GpuTensor: dispose() is idempotent, read() after it a DisposedError', async () => {
    const r = await mha.forward(q, q, q, { output: 'gpu-buffer' });
    r.output.dispose();
    r.output.dispose();
    await assert.rejects(r.output.read(), { name: 'DisposedError' });
  });
});
