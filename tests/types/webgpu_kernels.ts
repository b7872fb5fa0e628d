// WebGPU kernel variants as a user writes them (compiled with usage.ts by tsc --noEmit): pins,
// the variant names, the profile.
import { MultiHeadAttention, configure, gpuKernelVariants, type GpuProfile } from 'webattention';

async function kernelsExample() {
  const names = await gpuKernelVariants();
  configure({ gpuKernels: { linear: names.linear[0], attention: 'row' } });
  configure({ gpuKernels: null });
  const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu' });
  const profile: GpuProfile | null = mha.gpuProfile();
  const chosen: (string | null)[] = profile?.classes.map((c) => c.chosen) ?? [];
  const dropped: string[] = profile?.rejected.map((r) => `${r.kernel}:${r.variant} ${r.maxAbsDiff} > ${r.tolerance}`) ?? [];
  const threshold: number = profile?.autoThreshold.measured ? profile.autoThreshold.flops : 0;
  const uncompiled: string[] = profile?.rejected.flatMap((r) => (r.error === undefined ? [] : [r.error])) ?? [];
  const half = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, backend: 'webgpu', gpuPrecision: 'float16' });
  const float16: boolean = half.gpuProfile()?.precision.float16 ?? false;
  return [chosen, dropped, threshold, uncompiled, float16];
}
kernelsExample;

// @ts-expect-error: gpuPrecision is 'float32' or 'float16'
MultiHeadAttention.create({ embedDim: 16, numHeads: 4, gpuPrecision: 'float64' });
// @ts-expect-error: a pin is a variant name
configure({ gpuKernels: { linear: 3 } });
// @ts-expect-error: the families are linear, attention and decode
configure({ gpuKernels: { softmax: 'row' } });
