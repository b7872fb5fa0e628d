// GPU-resident tensors (README "Tensors on the GPU"): forward()'s inputs as { gpuBuffer, shape },
// its results with output: 'gpu-buffer' (GpuTensors: read(), dispose()), bit for bit what the same
// module gives on host tensors (the same kernels on the same bytes); a 2-layer chain fed output to
// input on one device; a decode step through a 2-layer stack, each layer on its own KV cache, with
// no MAP_READ until read(); 'auto' and 'wasm' modules; hostile buffers and options, each a typed
// error naming the argument, the module usable afterwards. Set-up: node_setup.mjs.
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { asFloat32, roundToHalf } from '../internals.mjs';
import { adapterName, captureWarnings, device, freshDevice, gpu, randomStateDict, runs, seededModules } from './node_setup.mjs';

const E = 16;
const create = { embedDim: E, numHeads: 2, backend: 'webgpu' };
const STORAGE = 0x80;
const COPY_SRC = 0x4;
const COPY_DST = 0x8;
const MAP_READ = 0x1;

/** A GPU tensor of `data` on `on` (usage STORAGE | COPY_SRC unless told). */
function gpuTensor(data, shape, { on = device, usage = STORAGE | COPY_SRC | COPY_DST } = {}) {
  const gpuBuffer = on.createBuffer({ size: data.byteLength, usage, mappedAtCreation: true });
  new Float32Array(gpuBuffer.getMappedRange()).set(data);
  gpuBuffer.unmap();
  return { gpuBuffer, shape, dtype: 'float32' };
}
const host = (rows, seed, B = 1) => ({ data: filled(B * rows * E, seed), shape: [B, rows, E] });
const onGpu = (t) => gpuTensor(t.data, t.shape);

const { modules, module } = seededModules({ ...create });

// Counts MAP_READ maps of any buffer of `device` during fn() (a readback maps its buffer so).
async function mapReads(fn) {
  const probe = device.createBuffer({ size: 4, usage: COPY_DST });
  const proto = Object.getPrototypeOf(probe);
  probe.destroy();
  const original = proto.mapAsync;
  let count = 0;
  proto.mapAsync = function mapAsync(mode, ...rest) {
    if (mode & MAP_READ) count++;
    return original.call(this, mode, ...rest);
  };
  try {
    await fn();
  } finally {
    proto.mapAsync = original;
  }
  return count;
}

describe(`GPU-resident tensors (Dawn, ${adapterName})`, () => {
  test('GPU inputs and gpu-buffer output: the host call\'s values, bit for bit, output and weights', async () => {
    const mha = await module();
    const [q, k, v] = [host(5, 1, 2), host(7, 2, 2), host(7, 3, 2)];
    for (const options of [{}, { needWeights: true }, { needWeights: true, averageAttnWeights: false, isCausal: true }]) {
      const expected = await mha.forward(q, k, v, options);
      const inputs = [q, k, v].map(onGpu);
      const viaGpu = await mha.forward(...inputs, { ...options, output: 'gpu-buffer' });
      assert.deepEqual(viaGpu.output.shape, expected.output.shape);
      assert.equal(viaGpu.output.dtype, 'float32');
      assert.deepEqual(await viaGpu.output.read(), expected.output.data);
      if (options.needWeights) {
        assert.deepEqual(viaGpu.attnWeights.shape, expected.attnWeights.shape);
        assert.deepEqual(await viaGpu.attnWeights.read(), expected.attnWeights.data);
      } else {
        assert.equal(viaGpu.attnWeights, null);
      }
      // GPU inputs, host output; host inputs, GPU output.
      assert.deepEqual((await mha.forward(...inputs, options)).output.data, expected.output.data);
      const up = await mha.forward(q, k, v, { ...options, output: 'gpu-buffer' });
      assert.deepEqual(await up.output.read(), expected.output.data);
      for (const t of [viaGpu.output, viaGpu.attnWeights, up.output, up.attnWeights]) t?.dispose();
      for (const t of inputs) t.gpuBuffer.destroy();
    }
  });

  test('float16 host inputs with output \'gpu-buffer\': a float16 GpuTensor, the widened inputs\' float32 result rounded as the host rounds it', async () => {
    const mha = await module();
    const q = host(4, 15);
    const bits = roundToHalf('float16', q.data);
    const widened = { data: asFloat32(bits, 'float16'), shape: q.shape };
    const expected = (await mha.forward(widened, widened, widened)).output.data;
    const half = { data: bits, shape: q.shape, dtype: 'float16' };
    const got = await mha.forward(half, half, half, { output: 'gpu-buffer' });
    assert.equal(got.output.dtype, 'float16');
    assert.deepEqual(await got.output.read(), roundToHalf('float16', expected));
    got.output.dispose();
  });

  test("onnxruntime-web's tensors: a GPU one ({ location, gpuBuffer, dims, type }) is read on the device, a CPU one (whose gpuBuffer getter throws) as before", async () => {
    const mha = await module();
    const q = host(3, 17);
    const expected = (await mha.forward(q, q, q)).output.data;
    const g = onGpu(q);
    const ortGpu = { location: 'gpu-buffer', gpuBuffer: g.gpuBuffer, dims: q.shape, type: 'float32' };
    runs.length = 0;
    assert.deepEqual((await mha.forward(ortGpu, ortGpu, ortGpu)).output.data, expected);
    assert.deepEqual(runs, ['webgpu']);
    class OrtCpuTensor {
      constructor(data, dims) { Object.assign(this, { location: 'cpu', data, dims, type: 'float32' }); }
      get gpuBuffer() { throw new Error('The data is not stored as a WebGPU buffer.'); }
    }
    const ortCpu = new OrtCpuTensor(q.data, q.shape);
    assert.deepEqual((await mha.forward(ortCpu, ortCpu, ortCpu)).output.data, expected);
    g.gpuBuffer.destroy();
  });

  test('self-attention on one buffer (the fused projection) and unbatched shapes', async () => {
    const mha = await module();
    const x = { data: filled(6 * E, 9), shape: [6, E] };
    const expected = await mha.forward(x, x, x, { isCausal: true });
    const gx = onGpu(x);
    const got = await mha.forward(gx, gx, gx, { isCausal: true, output: 'gpu-buffer' });
    assert.deepEqual(got.output.shape, [6, E]);
    assert.deepEqual(await got.output.read(), expected.output.data);
    got.output.dispose();
    gx.gpuBuffer.destroy();
  });

  test('a 2-layer chain on one device: output buffer to input, no readback between, the host chain bit for bit', async () => {
    const [a, b] = [await module({}, 11), await module({}, 12)];
    const x = host(9, 21, 2);
    const h = (await a.forward(x, x, x)).output;
    const expected = (await b.forward(h, h, h)).output;
    const gx = onGpu(x);
    let y;
    const reads = await mapReads(async () => {
      const first = await a.forward(gx, gx, gx, { output: 'gpu-buffer' });
      y = await b.forward(first.output, first.output, first.output, { output: 'gpu-buffer' });
      first.output.dispose();
    });
    assert.equal(reads, 0, 'no MAP_READ before read()');
    assert.deepEqual(await y.output.read(), expected.data);
    y.output.dispose();
    gx.gpuBuffer.destroy();
  });

  test('a decode step through a 2-layer stack, each layer on its own cache, on the device until read()', async () => {
    const layers = [await module({ numKvHeads: 1 }, 31), await module({ numKvHeads: 1 }, 32)];
    const hostCaches = layers.map((m) => m.createCache({ maxLength: 16 }));
    const gpuCaches = layers.map((m) => m.createCache({ maxLength: 16 }));
    for (const [step, rows] of [[0, 4], [1, 1], [2, 1], [3, 1]]) {
      const x = host(rows, 40 + step);
      let expected = x;
      for (const [i, m] of layers.entries()) expected = (await m.forward(expected, expected, expected, { cache: hostCaches[i] })).output;
      let t = onGpu(x);
      const input = t;
      let weights;
      const reads = await mapReads(async () => {
        for (const [i, m] of layers.entries()) {
          const r = await m.forward(t, t, t, { cache: gpuCaches[i], output: 'gpu-buffer', needWeights: i === 1 });
          if (t !== input) t.dispose();
          t = r.output;
          weights = r.attnWeights;
        }
      });
      assert.equal(reads, 0, `step ${step}: no MAP_READ before read()`);
      assert.deepEqual(await t.read(), expected.data, `step ${step}`);
      assert.deepEqual(weights.shape, [1, rows, gpuCaches[1].length]);
      t.dispose();
      weights.dispose();
      input.gpuBuffer.destroy();
    }
  });

  test('keep() after a cached call on GPU inputs: a prefix is kept; a row that moves is a CacheError, the cache unchanged', async () => {
    const mha = await module({ numKvHeads: 1 }, 33);
    const cache = mha.createCache({ maxLength: 16 });
    const hostCache = mha.createCache({ maxLength: 16 });
    const x = host(3, 50);
    const t = onGpu(x);
    await mha.forward(t, t, t, { cache });
    await mha.forward(x, x, x, { cache: hostCache });
    assert.throws(() => cache.keep([0, 2]), (e) => e.name === 'CacheError' && e.argument === 'indices' && /GPU tensors/.test(e.message));
    assert.equal(cache.length, 3);
    cache.keep([0, 1]);
    hostCache.keep([0, 1]);
    assert.equal(cache.length, 2);
    assert.deepEqual(await cache.read(), await hostCache.read());
    t.gpuBuffer.destroy();
  });

  test("'auto': GPU inputs run on the GPU whatever their size; host inputs under the threshold compute on WASM into a buffer", async () => {
    const mha = await module({ backend: 'auto', webgpuMinFlops: 1e15 });
    const [q, k, v] = [host(3, 51), host(4, 52), host(4, 53)];
    const expected = await mha.forward(q, k, v);
    runs.length = 0;
    const up = await mha.forward(q, k, v, { output: 'gpu-buffer' });
    assert.deepEqual(runs, ['wasm']);
    assert.deepEqual(await up.output.read(), expected.output.data);
    const inputs = [q, k, v].map(onGpu);
    runs.length = 0;
    const got = await mha.forward(...inputs);
    assert.deepEqual(runs, ['webgpu']);
    // WASM and the GPU agree to the contract's tolerance, not bit for bit.
    got.output.data.forEach((x, i) => assert.ok(Math.abs(x - expected.output.data[i]) < 1e-4, `element ${i}`));
    up.output.dispose();
    for (const t of inputs) t.gpuBuffer.destroy();
  });

  test('two modules given one GPU object share its device: one\'s output is the other\'s input', async () => {
    const shared = (seed) => MultiHeadAttention.create({ ...create, gpu }).then((m) => {
      m.loadStateDict(randomStateDict(m.stateDictShapes, seed));
      modules.push(m);
      return m;
    });
    const [a, b] = [await shared(91), await shared(92)];
    // The device the package made for that GPU object: where the caller's buffers go.
    assert.ok(a.gpuDevice && a.gpuDevice === b.gpuDevice && a.gpuDevice !== device);
    const x = host(5, 93);
    const h = (await a.forward(x, x, x)).output;
    const expected = (await b.forward(h, h, h)).output.data;
    const first = await a.forward(x, x, x, { output: 'gpu-buffer' });
    const second = await b.forward(first.output, first.output, first.output);
    assert.deepEqual(second.output.data, expected);
    first.output.dispose();
  });

  test("'auto': a cache made on WASM (before the GPU) is a CacheError for a GPU call; a windowed step over one pass a MemoryError", async () => {
    const auto = await module({ backend: 'auto', webgpuMinFlops: 1e15 });
    const cache = auto.createCache({ maxLength: 8 });
    const row = host(1, 95);
    const g = onGpu(row);
    await assert.rejects(auto.forward(g, g, g, { cache }), { name: 'CacheError', argument: 'cache' });
    await assert.rejects(auto.forward(row, row, row, { cache, output: 'gpu-buffer' }), { name: 'CacheError', argument: 'cache' });
    assert.equal(cache.length, 0);
    const mha = await module();
    const windowed = mha.createCache({ window: 2 });
    const long = onGpu(host(80, 96));  // a window of 2 rings over 65 slots: 64 rows per pass
    await assert.rejects(mha.forward(long, long, long, { cache: windowed }), { name: 'MemoryError', argument: 'cache' });
    assert.equal(windowed.length, 0);
    for (const t of [g, long]) t.gpuBuffer.destroy();
  });

  test('a GPU input with non-finite weights, or beside a host key with a NaN a row sees: BackendError, never garbage', async () => {
    const mha = await module();
    const q = host(3, 97);
    const gq = onGpu(q);
    const k = host(3, 98);
    k.data[5] = NaN;
    await assert.rejects(mha.forward(gq, k, k), { name: 'BackendError', argument: 'query' });
    const shapes = mha.stateDictShapes;
    const weights = randomStateDict(shapes, 99);
    weights[shapes[0].name].data[0] = Infinity;
    mha.loadStateDict(weights);
    await assert.rejects(mha.forward(gq, q, q), { name: 'BackendError', argument: 'query' });
    gq.gpuBuffer.destroy();
  });

  test("backend 'wasm': a GPU input or output 'gpu-buffer' is an OptionError naming it", async () => {
    const mha = await module({ backend: 'wasm', gpu: undefined });
    assert.equal(mha.gpuDevice, null);
    const q = host(3, 61);
    const gq = onGpu(q);
    await assert.rejects(mha.forward(gq, q, q), { name: 'OptionError', argument: 'query' });
    await assert.rejects(mha.forward(q, q, q, { output: 'gpu-buffer' }), { name: 'OptionError', argument: 'output' });
    await assert.rejects(mha.forward(q, q, q, { output: 'gpu' }), { name: 'OptionError', argument: 'output' });
    assert.equal((await mha.forward(q, q, q)).output.data.length, 3 * E);
    gq.gpuBuffer.destroy();
  });
});

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
