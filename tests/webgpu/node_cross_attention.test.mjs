// Cross-attention on a 'webgpu' module (mha.encode(), docs/attention-math/decoding.md §9): the encoded cache
// is stored and attended on the GPU (webgpu/gpu_encode.js). The runs of tests/contract/cross_attention.mjs
// (steps against the float64 reference per cache dtype, and against the module's own full
// forward), each step run on the GPU; non-finite encoder rows under the NaN rule as WASM gives
// them; a step with a GPU query and a 'gpu-buffer' result; int4 weights with int8 activations;
// forks, reads and the read-only refusals. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { compare, randomTensor, rng } from '../contract/contract.mjs';
import { B, FULL_FORWARD_MODULES, REFERENCE_DTYPES, S, fullForwardRun, loadedModule, referenceRun } from '../contract/cross_attention.mjs';
import { adapterName, gpu, runs } from './node_setup.mjs';

const [STORAGE, COPY_DST] = [0x80, 0x8];  // GPUBufferUsage's (Node has no such global)
const create = (options) => api.MultiHeadAttention.create({ ...options, backend: 'webgpu', gpu });
const onGpu = () => {
  assert.deepEqual(runs, ['webgpu'], 'the step ran on the GPU');
  runs.length = 0;
};
const assertClose = (got, want, what) => {
  const r = compare(got, want);
  assert.ok(r.ok, `${what}: ${r.detail}`);
};

describe(`encode() on backend 'webgpu' (${adapterName}): the cache on the GPU`, () => {
  for (const dtype of REFERENCE_DTYPES) {
    test(`steps = the float64 cross-attention, widths of their own, ${dtype} cache`, () => {
      runs.length = 0;
      return referenceRun(create, dtype, { onStep: onGpu });
    });
  }
  for (const options of [...FULL_FORWARD_MODULES, { embedDim: 32, numHeads: 2, weightsDtype: 'int4', activations: 'int8' }]) {
    test(`steps = the full forward: ${JSON.stringify(options)}, one tensor as key and value`, () => {
      runs.length = 0;
      return fullForwardRun(create, options, { onStep: () => { assert.equal(runs[0], 'webgpu'); runs.length = 0; } });
    });
  }

  test('non-finite encoder rows: the steps give what WASM gives (NaN rows, masked rows absent)', async () => {
    const next = rng(31);
    const options = { embedDim: 16, numHeads: 4 };
    const { mha: gpuMha, sd } = await loadedModule(create, options, next);
    const wasm = await api.MultiHeadAttention.create({ ...options, backend: 'wasm' });
    try {
      wasm.loadStateDict(sd);
      const kv = randomTensor([B, S, 16], next);
      kv.data.fill(NaN, 5 * 16, 6 * 16);                 // batch 0, row 5: every row of batch 0 sees it
      kv.data[(S + 2) * 16 + 3] = Infinity;              // batch 1, row 2: padded away below
      const kpm = { data: Uint8Array.from({ length: B * S }, (_, k) => (k === S + 2 ? 1 : 0)), shape: [B, S] };
      const [onGpuCache, onWasm] = [await gpuMha.encode(kv, kv, { dtype: 'float16' }), await wasm.encode(kv, kv, { dtype: 'float16' })];
      const query = randomTensor([B, 2, 16], next);
      const o = { keyPaddingMask: kpm, needWeights: true };
      runs.length = 0;
      const got = await gpuMha.forward(query, null, null, { cache: onGpuCache, ...o });
      onGpu();
      const want = await wasm.forward(query, null, null, { cache: onWasm, ...o });
      assert.ok(got.output.data.slice(0, 2 * 16).every(Number.isNaN), 'batch 0 is NaN');
      assert.ok(got.output.data.slice(2 * 16).every(Number.isFinite), 'batch 1 is finite');
      assertClose(got.output, want.output, 'output');
      assertClose(got.attnWeights, want.attnWeights, 'weights');
    } finally {
      gpuMha.dispose();
      wasm.dispose();
    }
  });

  test('a GPU query and a \'gpu-buffer\' result, alone and in a GpuBatch; fork, read, and the read-only refusals', async () => {
    const next = rng(37);
    const { mha } = await loadedModule(create, { embedDim: 16, numHeads: 4 }, next);
    try {
      const kv = randomTensor([B, S, 16], next);
      const encoded = await mha.encode(kv, kv);
      const query = randomTensor([B, 1, 16], next);
      const host = await mha.forward(query, null, null, { cache: encoded });
      const device = mha.gpuDevice;
      const buffer = device.createBuffer({ size: query.data.byteLength, usage: STORAGE | COPY_DST });
      device.queue.writeBuffer(buffer, 0, query.data);
      const { output } = await mha.forward({ gpuBuffer: buffer, shape: query.shape }, null, null, { cache: encoded, output: 'gpu-buffer' });
      assert.deepEqual(await output.read(), host.output.data, 'the same kernels on the same values');
      output.dispose();
      // Recorded into a GpuBatch: nothing runs until its submit, then the same values.
      const batch = new api.GpuBatch();
      const batched = await mha.forward({ gpuBuffer: buffer, shape: query.shape }, null, null, { cache: encoded, output: 'gpu-buffer', batch });
      assert.equal(batch.pending, 1);
      await batch.submit();
      assert.deepEqual(await batched.output.read(), host.output.data, 'batched');
      batched.output.dispose();
      buffer.destroy();

      const fork = encoded.fork();
      assert.equal(fork.encoded, true);
      assert.deepEqual((await mha.forward(query, null, null, { cache: fork })).output.data, host.output.data);
      const [mine, its] = [await encoded.read(), await fork.read()];
      assert.deepEqual(its.key.data, mine.key.data);
      assert.deepEqual(mine.value.shape, [B, 4, S, 4]);
      fork.dispose();
      assert.throws(() => encoded.truncate(3), (e) => e instanceof api.CacheError && /read-only/.test(e.message));
      assert.throws(() => encoded.reset(), (e) => e instanceof api.CacheError && /read-only/.test(e.message));
      assert.equal(encoded.length, S);
    } finally {
      mha.dispose();
    }
  });

  test('an encoder output left on the GPU (float32, or float16 bits) encodes as the same values from the host; a WASM module refuses it', async () => {
    const next = rng(41);
    const { mha, sd } = await loadedModule(create, { embedDim: 16, numHeads: 4 }, next);
    const wasm = await api.MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'wasm' });
    try {
      wasm.loadStateDict(sd);
      const device = mha.gpuDevice;
      const onDevice = (data, dtype) => {
        const buffer = device.createBuffer({ size: Math.ceil(data.byteLength / 4) * 4, usage: STORAGE | COPY_DST });
        device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
        return { gpuBuffer: buffer, shape: [B, S, 16], dtype };
      };
      // float16 bits of values that float16 holds exactly: the same values as float32 on the host.
      const halves = Uint16Array.from({ length: B * S * 16 }, (_, i) => 0x3c00 + ((i * 37) % 512) - 256);
      const values = new Float32Array(halves.length);
      for (let i = 0; i < halves.length; i++) {
        const h = halves[i];
        values[i] = (h & 0x8000 ? -1 : 1) * 2 ** (((h >> 10) & 31) - 15) * (1 + (h & 1023) / 1024);
      }
      const host = { data: values, shape: [B, S, 16] };
      const query = randomTensor([B, 2, 16], next);
      const want = await mha.forward(query, null, null, { cache: await mha.encode(host, host) });
      for (const [given, dtype] of [[values, 'float32'], [halves, 'float16']]) {
        const tensor = onDevice(given, dtype);
        const encoded = await mha.encode(tensor, tensor);
        runs.length = 0;
        const got = await mha.forward(query, null, null, { cache: encoded });
        onGpu();
        assert.deepEqual(got.output.data, want.output.data, `${dtype} on the GPU`);
        await assert.rejects(() => wasm.encode(tensor, tensor), (e) => e instanceof api.OptionError && e.argument === 'key');
        tensor.gpuBuffer.destroy();
      }
    } finally {
      mha.dispose();
      wasm.dispose();
    }
  });
});
