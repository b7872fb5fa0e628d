// float16 GPU inputs (docs/webgpu/tensors.md#tensors-on-the-gpu): { gpuBuffer, shape, dtype: 'float16' },
// the bits widened on the device (kernels/widen_half.wgsl.js). The kernel alone on all 65536
// patterns against an independent decode (subnormals, ±0, ±Inf, NaN payloads: bit for bit); then
// forward() on float16 GPU inputs bit for bit the same values as float32 GPU inputs (STORAGE and
// COPY_SRC-only buffers, self-attention on one buffer, an odd element count, a cached GQA step,
// 'cpu' output rounded to float16 as for host float16 inputs); the narrowing kernel alone about
// every rounding boundary, and 'gpu-buffer' results of float16 calls (float16: the float32 ones
// rounded as the host rounds them, on the GPU and on the CPU path); the byte length an odd count needs;
// other dtypes and mixed dtypes typed errors. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { Usage, WIDEN_HALF_PARAMS, asFloat32, f32BitsToF16, narrowHalfShader, packParams, roundToHalf, widenHalfGrid, widenHalfShader } from '../internals.mjs';
import { adapterName, device, runs, seededModules } from './node_setup.mjs';
import { gpuTensor, halfGpuTensor } from './gpu_tensor_inputs.mjs';

const { module } = seededModules({ embedDim: 16, numHeads: 2, backend: 'webgpu' });

// COPY_SRC-only buffers: a GPU input needs no more usage than STORAGE and the staging copy's.
const floatTensor = (data, shape) => gpuTensor(data, shape, { usage: Usage.STORAGE | Usage.COPY_SRC });
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

// A half kernel alone (widen_half.wgsl.js): `shader` over `count` elements of `input` (the bytes
// it reads), writing `outBytes`; resolves to the words written.
async function halfKernel(shader, input, count, outBytes) {
  const make = (size, usage) => device.createBuffer({ size, usage });
  const source = make(Math.ceil(input.byteLength / 4) * 4, Usage.STORAGE | Usage.COPY_DST);
  const out = make(outBytes, Usage.STORAGE | Usage.COPY_SRC);
  const uniforms = make(WIDEN_HALF_PARAMS.length * 4, Usage.UNIFORM | Usage.COPY_DST);
  const readback = make(out.size, Usage.MAP_READ | Usage.COPY_DST);
  try {
    device.queue.writeBuffer(source, 0, input.buffer, input.byteOffset, Math.ceil(input.byteLength / 4) * 4);
    device.queue.writeBuffer(uniforms, 0, packParams(WIDEN_HALF_PARAMS, { count }));
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module: device.createShaderModule({ code: shader }), entryPoint: 'main' } });
    const bindGroup = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [uniforms, source, out].map((buffer, binding) => ({ binding, resource: { buffer } })) });
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bindGroup);
    pass.dispatchWorkgroups(...widenHalfGrid(count));
    pass.end();
    encoder.copyBufferToBuffer(out, 0, readback, 0, out.size);
    device.queue.submit([encoder.finish()]);
    await readback.mapAsync(1);
    return new Uint32Array(readback.getMappedRange().slice(0));
  } finally {
    for (const b of [source, out, uniforms, readback]) b.destroy();
  }
}

const widenedOnDevice = (bits) => halfKernel(widenHalfShader(), Uint16Array.from([...bits, ...(bits.length % 2 ? [0] : [])]), bits.length, bits.length * 4);
const narrowedOnDevice = async (words) => new Uint16Array((await halfKernel(narrowHalfShader(), words, words.length, Math.ceil(words.length / 2) * 4)).buffer);

// float32 bit patterns about every float16 rounding boundary: each half's value, the midpoints to
// its neighbour, each ± one float32 ulp (both signs, subnormals, 65504 → 65520 and on), the
// float32 subnormals and specials, and seeded random patterns.
function narrowingInputs() {
  const bits = (x) => new Uint32Array(Float32Array.of(x).buffer)[0];
  const words = [];
  const around = (w) => words.push(w, (w + 1) >>> 0, (w - 1) >>> 0);
  const value = (h) => asFloat32(Uint16Array.of(h), 'float16')[0];
  for (let h = 0; h < 0x7c00; h++) {
    for (const sign of [0, 0x80000000]) {
      around((bits(value(h)) | sign) >>> 0);
      around((bits((value(h) + (h === 0x7bff ? 65536 : value(h + 1))) / 2) | sign) >>> 0);
    }
  }
  words.push(0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff, 0x7fffffff, 0x00000001, 0x807fffff, 0x00000000, 0x80000000);
  let seed = 7;
  for (let i = 0; i < 50001; i++) words.push((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0));
  return Uint32Array.from(words);
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

  test('the narrowing kernel (float16 \'gpu-buffer\' results): f32BitsToF16() bit for bit about every rounding boundary, an odd count', async () => {
    const words = narrowingInputs();
    const got = await narrowedOnDevice(words);
    for (let i = 0; i < words.length; i++) {
      const want = f32BitsToF16(words[i]);
      if (got[i] !== want) assert.fail(`f32 0x${words[i].toString(16)}: 0x${got[i].toString(16)}, expected 0x${want.toString(16)}`);
    }
    assert.equal(words.length % 2, 1, 'an odd count: the last word holds one half');
    assert.equal(got[words.length], 0, 'and a zero half after it');
  });

  test('forward() on float16 GPU inputs: the same values as float32 GPU inputs, bit for bit (STORAGE, COPY_SRC only, one buffer; dtype \'F16\' too)', async () => {
    const mha = await module({}, 61);
    const [q, k, v] = [[2, 5, 62], [2, 7, 63], [2, 7, 64]].map(([B, L, seed]) => ({ bits: halfBits(B * L * 16, seed), shape: [B, L, 16] }));
    const wide = (t) => floatTensor(asFloat32(t.bits, 'float16'), t.shape);
    const reference = [q, k, v].map(wide);
    const want = await mha.forward(...reference, { output: 'gpu-buffer', needWeights: true });
    for (const usage of [Usage.STORAGE | Usage.COPY_SRC, Usage.COPY_SRC]) {
      const halves = [q, k, v].map((t) => halfGpuTensor(t.bits, t.shape, { usage }));
      // 'gpu-buffer' results: float16, the float32 ones rounded on the device as the host rounds them.
      const got = await mha.forward(...halves, { output: 'gpu-buffer', needWeights: true });
      assert.deepEqual([got.output.dtype, got.attnWeights.dtype], ['float16', 'float16']);
      assert.deepEqual(await got.output.read(), roundToHalf('float16', await want.output.read()));
      assert.deepEqual(await got.attnWeights.read(), roundToHalf('float16', await want.attnWeights.read()));
      // 'cpu' output: float16, as a host float16 call's.
      const onHost = await mha.forward(...halves);
      const hostHalf = await mha.forward(...[q, k, v].map((t) => ({ data: t.bits, shape: t.shape, dtype: 'float16' })));
      assert.equal(onHost.output.dtype, 'float16');
      assert.deepEqual(onHost.output.data, hostHalf.output.data);
      for (const t of [got.output, got.attnWeights]) t.dispose();
      for (const t of halves) t.gpuBuffer.destroy();
    }
    // A host tensor's other names of the dtypes ('F16', 'F32', as loadSafetensors() tags them) say the same.
    const named = [{ ...halfGpuTensor(q.bits, q.shape), dtype: 'F16' }, { ...reference[1], dtype: 'F32' }];
    const aliased = await mha.forward(named[0], named[0], named[0], { output: 'gpu-buffer' });
    const halfSelf = await mha.forward(...Array(3).fill(halfGpuTensor(q.bits, q.shape)), { output: 'gpu-buffer' });
    assert.deepEqual([aliased.output.dtype, await aliased.output.read()], ['float16', await halfSelf.output.read()]);
    const wideNamed = await mha.forward(reference[0], named[1], reference[2], { output: 'gpu-buffer' });
    assert.deepEqual(await wideNamed.output.read(), await want.output.read());
    for (const t of [aliased.output, halfSelf.output, wideNamed.output]) t.dispose();
    named[0].gpuBuffer.destroy();
    const one = halfGpuTensor(q.bits, q.shape);
    const self = await mha.forward(one, one, one, { isCausal: true, output: 'gpu-buffer' });
    const selfWant = await mha.forward(reference[0], reference[0], reference[0], { isCausal: true, output: 'gpu-buffer' });
    assert.deepEqual(await self.output.read(), roundToHalf('float16', await selfWant.output.read()));
    // A float16 result is a float16 input of the next call: the same as its values given as float32.
    const next = await mha.forward(self.output, self.output, self.output, { output: 'gpu-buffer' });
    const nextWant = await mha.forward(...Array(3).fill(floatTensor(asFloat32(await self.output.read(), 'float16'), q.shape)), { output: 'gpu-buffer' });
    assert.deepEqual(await next.output.read(), roundToHalf('float16', await nextWant.output.read()));
    next.output.dispose();
    nextWant.output.dispose();
    for (const t of [self.output, selfWant.output, want.output, want.attnWeights]) t.dispose();
    for (const t of [...reference, one]) t.gpuBuffer.destroy();
  });

  test('an odd element count (E 15): a buffer of ⌈n/2⌉ words; 2n bytes alone is a ShapeError naming query with the bytes', async () => {
    const mha = await module({ embedDim: 15, numHeads: 3 }, 65);
    const bits = halfBits(3 * 15, 66);  // 45 halves: 92 bytes
    const half = halfGpuTensor(bits, [1, 3, 15]);
    assert.equal(half.gpuBuffer.size, 92);
    const wide = floatTensor(asFloat32(bits, 'float16'), [1, 3, 15]);
    const got = await mha.forward(half, half, half, { output: 'gpu-buffer' });
    const want = await mha.forward(wide, wide, wide, { output: 'gpu-buffer' });
    assert.equal(got.output.gpuBuffer.size, 92, 'an odd count of float16 results: ⌈n/2⌉ words');
    assert.deepEqual(await got.output.read(), roundToHalf('float16', await want.output.read()));
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
      const half = halfGpuTensor(bits, [1, rows, 32]);
      const wide = floatTensor(asFloat32(bits, 'float16'), [1, rows, 32]);
      const got = await mha.forward(half, half, half, { cache: halfCache, output: 'gpu-buffer' });
      const want = await mha.forward(wide, wide, wide, { cache: wideCache, output: 'gpu-buffer' });
      assert.deepEqual(await got.output.read(), roundToHalf('float16', await want.output.read()), `step ${s}`);
      for (const t of [got.output, want.output]) t.dispose();
      for (const t of [half, wide]) t.gpuBuffer.destroy();
    }
  });

  test('float16 \'gpu-buffer\' results on every path: host float16 inputs, a GpuBatch, a call computed on the CPU; bfloat16 calls give float32', async () => {
    const halfHost = (rows, seed) => ({ data: halfBits(rows * 16, seed), shape: [1, rows, 16], dtype: 'float16' });
    const [q, kv] = [halfHost(3, 80), halfHost(9, 81)];
    const mha = await module({}, 82);
    const onHost = await mha.forward(q, kv, kv, { needWeights: true });  // read back, rounded on the host
    const onGpu = await mha.forward(q, kv, kv, { output: 'gpu-buffer', needWeights: true });
    assert.deepEqual(await onGpu.output.read(), onHost.output.data);
    assert.deepEqual(await onGpu.attnWeights.read(), onHost.attnWeights.data);
    const batch = new GpuBatch();
    const batched = await mha.forward(q, kv, kv, { output: 'gpu-buffer', batch });
    await batch.submit();
    assert.equal(batched.output.dtype, 'float16');
    assert.deepEqual(await batched.output.read(), onHost.output.data);
    // 'auto' under its threshold: computed on WASM, its result put into a new float16 buffer.
    const small = await module({ backend: 'auto', webgpuMinFlops: 2 ** 52 }, 82);
    runs.length = 0;
    const onCpu = await small.forward(q, kv, kv, { output: 'gpu-buffer' });
    assert.deepEqual(runs, ['wasm']);
    assert.equal(onCpu.output.dtype, 'float16');
    assert.deepEqual(await onCpu.output.read(), (await small.forward(q, kv, kv)).output.data);
    const bf16 = await mha.forward({ ...q, dtype: 'bfloat16' }, { ...kv, dtype: 'bfloat16' }, { ...kv, dtype: 'bfloat16' }, { output: 'gpu-buffer' });
    assert.equal(bf16.output.dtype, 'float32');
    assert.equal((await bf16.output.read()).constructor, Float32Array);
    for (const t of [onGpu.output, onGpu.attnWeights, batched.output, onCpu.output, bf16.output]) t.dispose();
  });

  test('bfloat16 or int8 GPU inputs, and a float16 GPU query beside float32 keys: DTypeError naming the argument', async () => {
    const mha = await module({}, 68);
    const bits = halfBits(4 * 16, 69);
    const host = { data: filled(4 * 16, 70), shape: [1, 4, 16] };
    for (const dtype of ['bfloat16', 'int8']) {
      const t = { ...halfGpuTensor(bits, [1, 4, 16]), dtype };
      await assert.rejects(mha.forward(t, t, t), (e) => e.name === 'DTypeError' && e.argument === 'query' && e.actual.includes(dtype));
      t.gpuBuffer.destroy();
    }
    const half = halfGpuTensor(bits, [1, 4, 16]);
    await assert.rejects(mha.forward(half, host, host), { name: 'DTypeError', argument: 'key' });
    const r = await mha.forward(half, half, half, { output: 'gpu-buffer' });  // usable afterwards
    r.output.dispose();
    half.gpuBuffer.destroy();
  });
});
