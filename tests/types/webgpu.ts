// The WebGPU options as a user writes them (compiled with usage.ts by tsc --noEmit). No WebGPU
// type package is needed: `gpu` is typed structurally.
import { BackendError, MultiHeadAttention, type GpuLike } from 'webattention';

declare const navigatorGpu: { requestAdapter(options?: { powerPreference?: string }): Promise<object | null> };
declare const device: { createBuffer(d: { size: number; usage: number }): object; readonly queue: object; destroy(): void };

async function webgpuExample() {
  const auto = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4 });
  const onGpu = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu', gpu: navigatorGpu });
  const shared = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'auto', gpu: device, webgpuMinFlops: 1e8 });
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

// @ts-expect-error: backend is 'auto', 'wasm' or 'webgpu'
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, backend: 'cuda' });
// @ts-expect-error: gpu must look like navigator.gpu or a GPUDevice
MultiHeadAttention.create({ embedDim: 8, numHeads: 2, gpu: 42 });
