// float16 GPU inputs (docs/webgpu.md#tensors-on-the-gpu): { gpuBuffer, shape, dtype: 'float16' },
// the bits widened on the device (kernels/widen_half.wgsl.js). The kernel alone on all 65536
// patterns against an independent decode (subnormals, ±0, ±Inf, NaN payloads: bit for bit); then
// forward() on float16 GPU inputs bit for bit the same values as float32 GPU inputs (STORAGE and
// COPY_SRC-only buffers, self-attention on one buffer, an odd element count, a cached GQA step,
// 'cpu' output rounded to float16 as for host float16 inputs); the byte length an odd count needs;
// other dtypes and mixed dtypes typed errors. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { filled } from '../contract/contract.mjs';
import { Usage, WIDEN_HALF_PARAMS, asFloat32, packParams, roundToHalf, widenHalfGrid, widenHalfShader } from '../internals.mjs';
import { adapterName, device, seededModules } from './node_setup.mjs';

const { module } = seededModules({ embedDim: 16, numHeads: 2, backend: 'webgpu' });

/** A float16 GPU tensor of `bits` (a Uint16Array): whole words, the last half-word zero. */
function halfTensor(bits, shape, usage = Usage.STORAGE | Usage.COPY_SRC) {
  const gpuBuffer = device.createBuffer({ size: Math.ceil(bits.length / 2) * 4, usage, mappedAtCreation: true });
  new Uint16Array(gpuBuffer.getMappedRange()).set(bits);
  gpuBuffer.unmap();
  return { gpuBuffer, shape, dtype: 'float16' };
}
function floatTensor(data, shape) {
  const gpuBuffer = device.createBuffer({ size: data.byteLength, usage: Usage.STORAGE | Usage.COPY_SRC, mappedAtCreation: true });
  new Float32Array(gpuBuffer.getMappedRange()).set(data);
  gpuBuffer.unmap();
  return { gpuBuffer, shape, dtype: 'float32' };
}
/** float16 bits of seeded values, with subnormals, ±0 and the largest half among them. */
function halfBits(n, seed) {
  const bits = roundToHalf('float16', filled(n, seed));
  [0x0001, 0x8003, 0x03ff, 0x0000, 0x8000, 0x7bff, 0xfbff].forEach((b, i) => { if (i * 5 < n) bits[i * 5] = b; });
  return bits;
}

// f32 bits of a half's value, decoded without the kernel's integer steps: its value as a double
// (exactly an f32), NaN's payload kept by hand.
function expectedBits(h) {
  const sign = h >> 15 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f && m !== 0) return ((h & 0x8000) << 16 | 0x7f800000 | m << 13) >>> 0;
  const value = e === 0x1f ? sign * Infinity : e === 0 ? sign * m * 2 ** -24 : sign * (1 + m / 1024) * 2 ** (e - 15);
  return new Uint32Array(Float32Array.of(value).buffer)[0];
}

async function widenedOnDevice(bits) {
  const halves = halfTensor(bits, [bits.length]).gpuBuffer;
  const make = (size, usage) => device.createBuffer({ size, usage });
  const out = make(bits.length * 4, Usage.STORAGE | Usage.COPY_SRC);
  const uniforms = make(WIDEN_HALF_PARAMS.length * 4, Usage.UNIFORM | Usage.COPY_DST);
  const readback = make(out.size, Usage.MAP_READ | Usage.COPY_DST);
  try {
    device.queue.writeBuffer(uniforms, 0, packParams(WIDEN_HALF_PARAMS, { count: bits.length }));
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code: widenHalfShader() }), entryPoint: 'main' } });
    const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [uniforms, halves, out].map((buffer, binding) => ({ binding, resource: { buffer } })) });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(...widenHalfGrid(bits.length));
    pass.end();
    encoder.copyBufferToBuffer(out, 0, readback, 0, out.size);
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(1);
    return new Uint32Array(readback.getMappedRange().slice(0));
  } finally {
    for (const b of [halves, out, uniforms, readback]) b.destroy();
  }
}

describe(`float16 GPU inputs (Dawn, ${adapterName})`, () => {
  test('the widening kernel: every one of the 65536 half patterns (and an odd count) bit for bit', async () => {
    for (const count of [65536, 65535]) {
      const bits = Uint16Array.from({ length: count }, (_, i) => i);
      const got = await widenedOnDevice(bits);
      for (let h = 0; h < count; h++) {
        if (got[h] !== expectedBits(h)) assert.fail(`half 0x${h.toString(16)}: 0x${got[h].toString(16)}, expected 0x${expectedBits(h).toString(16)}`);
      }
    }
  });

  test('forward() on float16 GPU inputs: the same values as float32 GPU inputs, bit for bit (STORAGE, COPY_SRC only, one buffer)', async () => {
    const mha = await module({}, 61);
    const [q, k, v] = [[2, 5, 62], [2, 7, 63], [2, 7, 64]].map(([B, L, seed]) => ({ bits: halfBits(B * L * 16, seed), shape: [B, L, 16] }));
    const wide = (t) => floatTensor(asFloat32(t.bits, 'float16'), t.shape);
    const reference = [q, k, v].map(wide);
    const want = await mha.forward(...reference, { output: 'gpu-buffer', needWeights: true });
    for (const usage of [Usage.STORAGE | Usage.COPY_SRC, Usage.COPY_SRC]) {
      const halves = [q, k, v].map((t) => halfTensor(t.bits, t.shape, usage));
      const got = await mha.forward(...halves, { output: 'gpu-buffer', needWeights: true });
      assert.equal(got.output.dtype, 'float32');
      assert.deepEqual(await got.output.read(), await want.output.read());
      assert.deepEqual(await got.attnWeights.read(), await want.attnWeights.read());
      // 'cpu' output: float16, as a host float16 call's.
      const onHost = await mha.forward(...halves);
      const hostHalf = await mha.forward(...[q, k, v].map((t) => ({ data: t.bits, shape: t.shape, dtype: 'float16' })));
      assert.equal(onHost.output.dtype, 'float16');
      assert.deepEqual(onHost.output.data, hostHalf.output.data);
      for (const t of [got.output, got.attnWeights]) t.dispose();
      for (const t of halves) t.gpuBuffer.destroy();
    }
    const one = halfTensor(q.bits, q.shape);
    const self = await mha.forward(one, one, one, { isCausal: true, output: 'gpu-buffer' });
    const selfWant = await mha.forward(reference[0], reference[0], reference[0], { isCausal: true, output: 'gpu-buffer' });
    assert.deepEqual(await self.output.read(), await selfWant.output.read());
    for (const t of [self.output, selfWant.output, want.output, want.attnWeights]) t.dispose();
    for (const t of [...reference, one]) t.gpuBuffer.destroy();
  });

  test('an odd element count (E 15): a buffer of ⌈n/2⌉ words; 2n bytes alone is a ShapeError naming query with the bytes', async () => {
    const mha = await module({ embedDim: 15, numHeads: 3 }, 65);
    const bits = halfBits(3 * 15, 66);  // 45 halves: 92 bytes
    const half = halfTensor(bits, [1, 3, 15]);
    assert.equal(half.gpuBuffer.size, 92);
    const wide = floatTensor(asFloat32(bits, 'float16'), [1, 3, 15]);
    const got = await mha.forward(half, half, half, { output: 'gpu-buffer' });
    const want = await mha.forward(wide, wide, wide, { output: 'gpu-buffer' });
    assert.deepEqual(await got.output.read(), await want.output.read());
    const short = { gpuBuffer: device.createBuffer({ size: 90, usage: Usage.STORAGE }), shape: [1, 3, 15], dtype: 'float16' };
    await assert.rejects(mha.forward(short, short, short), (e) => e.name === 'ShapeError' && e.argument === 'query'
      && e.expected === 92 && e.actual === 90 && /4-byte words/.test(e.message));
    for (const t of [got.output, want.output]) t.dispose();
    for (const t of [half, wide, short]) t.gpuBuffer.destroy();
  });

  test('a cached GQA step on float16 GPU inputs equals the float32 one, step after step', async () => {
    const mha = await module({ embedDim: 32, numHeads: 4, numKvHeads: 2, rotary: { dim: 8 } }, 67);
    const [halfCache, wideCache] = [mha.createCache({ maxLength: 16 }), mha.createCache({ maxLength: 16 })];
    for (const [s, rows] of [[0, 3], [1, 1], [2, 1]]) {
      const bits = halfBits(rows * 32, 70 + s);
      const half = halfTensor(bits, [1, rows, 32]);
      const wide = floatTensor(asFloat32(bits, 'float16'), [1, rows, 32]);
      const got = await mha.forward(half, half, half, { cache: halfCache, output: 'gpu-buffer' });
      const want = await mha.forward(wide, wide, wide, { cache: wideCache, output: 'gpu-buffer' });
      assert.deepEqual(await got.output.read(), await want.output.read(), `step ${s}`);
      for (const t of [got.output, want.output]) t.dispose();
      for (const t of [half, wide]) t.gpuBuffer.destroy();
    }
  });

  test('bfloat16 or int8 GPU inputs, and a float16 GPU query beside float32 keys: DTypeError naming the argument', async () => {
    const mha = await module({}, 68);
    const bits = halfBits(4 * 16, 69);
    const host = { data: filled(4 * 16, 70), shape: [1, 4, 16] };
    for (const dtype of ['bfloat16', 'int8']) {
      const t = { ...halfTensor(bits, [1, 4, 16]), dtype };
      await assert.rejects(mha.forward(t, t, t), (e) => e.name === 'DTypeError' && e.argument === 'query' && e.actual.includes(dtype));
      t.gpuBuffer.destroy();
    }
    const half = halfTensor(bits, [1, 4, 16]);
    await assert.rejects(mha.forward(half, host, host), { name: 'DTypeError', argument: 'key' });
    const r = await mha.forward(half, half, half, { output: 'gpu-buffer' });  // usable afterwards
    r.output.dispose();
    half.gpuBuffer.destroy();
  });
});
