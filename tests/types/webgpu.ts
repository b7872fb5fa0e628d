// The WebGPU options as a user writes them (compiled with usage.ts by tsc --noEmit). No WebGPU
// type package is needed: `gpu` is typed structurally.
import { BackendError, GpuBatch, GpuStep, MultiHeadAttention, scaledDotProductAttention, selfAttention, type GpuAttentionResult, type GpuLike, type GpuTensor } from 'webattention';

declare const navigatorGpu: { requestAdapter(options?: { powerPreference?: string }): Promise<object | null> };
declare const device: { createBuffer(d: { size: number; usage: number }): object; readonly queue: object; destroy(): void };
declare const commandDevice: { createCommandEncoder(): { beginComputePass(): { end(): void } } };

async function webgpuExample() {
  const auto = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4 });
  const onGpu = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu', gpu: navigatorGpu });
  const shared = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'auto', gpu: device, webgpuMinFlops: 1e8 });
  const prepared = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu', expect: { L: 4096, batchSize: 2 } });
  prepared.dispose();
  const gpuOnly = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu', hostWeights: false });
  gpuOnly.dispose();
  const where: 'wasm' | 'webgpu' = onGpu.backend;
  const gpu: GpuLike = device;
  try {
    await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu' });
  } catch (e) {
    if (e instanceof BackendError) console.log('no WebGPU here:', e.message);
  }
  // @ts-expect-error: backend is not part of the resolved (math) config
  auto.config.backend;
  return [where, gpu, shared];
}
webgpuExample;

// @ts-expect-error: expect's L is a number of rows
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, expect: { L: '4096' } });
// @ts-expect-error: hostWeights is a boolean
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'webgpu', hostWeights: 'no' });
// @ts-expect-error: backend is 'auto', 'wasm' or 'webgpu'
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'cuda' });
// @ts-expect-error: gpu must look like navigator.gpu or a GPUDevice
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, gpu: 42 });

// GPU-resident tensors: a buffer in, GpuTensors out, one module's output as the next one's input.
declare const buffer: { readonly size: number; readonly usage: number; destroy(): void; mapAsync(mode: number): Promise<void> };
async function gpuTensorsExample(a: MultiHeadAttention, b: MultiHeadAttention) {
  const x = { gpuBuffer: buffer, shape: [1, 8, 16] };
  const first: GpuAttentionResult = await a.forward(x, x, x, { output: 'gpu-buffer' });
  const second = await b.forward(first.output, first.output, first.output, { output: 'gpu-buffer', needWeights: true });
  const values: Float32Array = await second.output.read();
  const weights: GpuTensor | null = second.attnWeights;
  const onHost = await b.forward(x, x, x);
  const hostValues: Float32Array = onHost.output.data;
  first.output.dispose();
  const onDevice: object | null = a.gpuDevice;
  const ort = { location: 'gpu-buffer' as const, gpuBuffer: buffer, dims: [1, 8, 16], type: 'float32' as const };
  await a.forward(ort, ort, ort, { output: 'gpu-buffer' });
  const half = { gpuBuffer: buffer, shape: [1, 8, 16], dtype: 'float16' as const };
  const halfOnGpu = await a.forward(half, half, half, { output: 'gpu-buffer' });
  const halfBits: Uint16Array = await halfOnGpu.output.read();
  const halfAgain = await b.forward(halfOnGpu.output, halfOnGpu.output, halfOnGpu.output, { output: 'gpu-buffer' });
  const dtype: 'float16' = halfAgain.output.dtype;
  // @ts-expect-error: a float16 result reads as its bits
  const notFloats: Float32Array = await halfOnGpu.output.read();
  const halfOut: Uint16Array = (await a.forward(half, half, half)).output.data;
  const packed = { gpuBuffer: buffer, shape: [1, 8, 16], byteOffset: 512 };
  await a.forward(packed, packed, packed, { output: 'gpu-buffer' });
  // @ts-expect-error: byteOffset is a number of bytes
  await a.forward({ gpuBuffer: buffer, shape: [1, 8, 16], byteOffset: '512' }, x, x);
  // @ts-expect-error: a GPU tensor holds float32 or float16
  await a.forward({ gpuBuffer: buffer, shape: [1, 8, 16], dtype: 'bfloat16' }, x, x);
  // @ts-expect-error: output is 'cpu' or 'gpu-buffer'
  await a.forward(x, x, x, { output: 'gpu' });
  // The output copied into a place of the caller's own buffer: no buffer made per call.
  const placed = await a.forward(x, x, x, { output: 'gpu-buffer', out: { gpuBuffer: buffer, byteOffset: 256, shape: [1, 8, 16] } });
  const at: number = placed.output.byteOffset;
  // @ts-expect-error: out's byteOffset is a number of bytes
  await a.forward(x, x, x, { output: 'gpu-buffer', out: { gpuBuffer: buffer, byteOffset: '256' } });
  return [values, weights, hostValues, onDevice, halfOut, halfBits, dtype, notFloats, at];
}
gpuTensorsExample;

// One submit per step: the calls recorded into a GpuBatch, submitted once.
async function gpuBatchExample(layers: MultiHeadAttention[]) {
  const batch = new GpuBatch();
  let x: GpuTensor | { gpuBuffer: typeof buffer; shape: number[] } = { gpuBuffer: buffer, shape: [1, 1, 16] };
  for (const layer of layers) x = (await layer.forward(x, x, x, { output: 'gpu-buffer', batch })).output;
  const pending: number = batch.pending;
  // The caller's own pass between the layers, in the same submit.
  const passes: number = batch.encode(commandDevice, (encoder) => (encoder.beginComputePass().end(), 1));
  // @ts-expect-error: fn takes the device's encoder
  batch.encode(commandDevice, (encoder: { copyBufferToTexture(): void }) => encoder);
  await batch.submit();
  return pending + passes;
}
gpuBatchExample;

// A step recorded once, then replayed token after token.
async function gpuStepExample(layers: MultiHeadAttention[]) {
  const step = new GpuStep();
  const x = { gpuBuffer: buffer, shape: [1, 1, 16] };
  for (const layer of layers) await layer.forward(x, x, x, { output: 'gpu-buffer', out: { gpuBuffer: buffer }, batch: step });
  await step.submit();
  const replayed: Promise<void> = step.replay();
  const asBatch: GpuBatch = step;
  const freed: void = step.dispose();
  return [replayed, asBatch, freed];
}
gpuStepExample;

// scaledDotProductAttention() and selfAttention() on the GPU: host or GPU tensors, GpuTensors out.
async function sdpaOnGpuExample() {
  const q = { gpuBuffer: buffer, shape: [2, 8, 64] };
  const onDevice: GpuAttentionResult = await scaledDotProductAttention(q, q, q, { gpu: device, output: 'gpu-buffer', isCausal: true });
  const back: Float32Array = (await scaledDotProductAttention(onDevice.output, q, q, { gpu: device })).output.data;
  const host = { data: new Float32Array(64), shape: [8, 8] };
  const auto = await scaledDotProductAttention(host, host, host, { backend: 'auto', gpu: navigatorGpu, webgpuMinFlops: 0 });
  const self = await selfAttention(host, { backend: 'webgpu', gpu: device, output: 'gpu-buffer' });
  const half = { gpuBuffer: buffer, shape: [8, 8], dtype: 'float16' as const };
  const halfDtype: 'float16' = (await selfAttention(half, { output: 'gpu-buffer' })).output.dtype;
  // @ts-expect-error: hostWeights is a boolean
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'webgpu', hostWeights: 'no' });
// @ts-expect-error: backend is 'auto', 'wasm' or 'webgpu'
  await scaledDotProductAttention(host, host, host, { backend: 'cuda' });
  return [back, auto.output.data, self.output, halfDtype];
}
sdpaOnGpuExample;
