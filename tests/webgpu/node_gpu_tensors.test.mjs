// GPU-resident tensors (README "Tensors on the GPU"): forward()'s inputs as { gpuBuffer, shape },
// its results with output: 'gpu-buffer' (GpuTensors: read(), dispose()), bit for bit what the same
// module gives on host tensors (the same kernels on the same bytes); a 2-layer chain fed output to
// input on one device; a decode step through a 2-layer stack, each layer on its own KV cache, with
// no MAP_READ until read(); 'auto' and 'wasm' modules; non-finite weights and inputs. What a
// GPU tensor's buffer may be, and hostile ones: node_gpu_tensor_buffers.test.mjs. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch, MultiHeadAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { asFloat32, roundToHalf } from '../internals.mjs';
import { adapterName, device, gpu, randomStateDict, runs, seededModules } from './node_setup.mjs';
import { COPY_DST, E, MAP_READ, create, host, onGpu } from './gpu_tensor_inputs.mjs';

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

  test("'auto': a cache made on WASM (before the GPU) is a CacheError for a GPU call; a windowed step over one pass runs, in a GpuBatch too", async () => {
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
    // Cut into passes on the device (node_cache_device_passes.test.mjs), in a batch as well.
    const batch = new GpuBatch();
    const batched = await mha.forward(long, long, long, { cache: windowed, output: 'gpu-buffer', batch });
    assert.equal(windowed.length, 80);
    await batch.submit();
    batched.output.dispose();
    await mha.forward(long, long, long, { cache: windowed });
    assert.equal(windowed.length, 160);
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
