// 16- and 8-bit storage as a user writes it (tsc --noEmit): weightsDtype, the cache's dtype,
// 16-bit tensors in and out, loadSafetensors(bytes, { convert: false }) into loadStateDict().
import {
  MultiHeadAttention, loadSafetensors, scaledDotProductAttention, selfAttention,
  type HalfTensor, type KvCache, type SafetensorsHalfTensor, type SafetensorsTensor,
} from 'webattention';

async function halves(bytes: Uint8Array) {
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'float16' });
  const file = loadSafetensors(bytes, { convert: false });
  const tensor: SafetensorsTensor | SafetensorsHalfTensor | undefined = file.get('in_proj_weight');
  mha.loadStateDict(file);
  mha.loadStateDict({ in_proj_weight: { data: new Uint16Array(192), shape: [24, 8], dtype: 'F16' } }, { strict: false });
  const x = { data: new Uint16Array(16), shape: [2, 8], dtype: 'float16' } as const;
  const { output } = await mha.forward(x, x, x);
  const out: HalfTensor = output;
  const ort = { data: new Uint16Array(16), dims: [2, 8], type: 'float16' } as const;
  const sdpa: HalfTensor = (await scaledDotProductAttention(ort, ort, ort)).output;
  // `type` is taken wherever `dtype` is: beside shape, and in safetensors' spelling beside dims.
  const typed = { data: new Uint16Array(16), shape: [2, 8], type: 'BF16' } as const;
  const viaType: HalfTensor = (await selfAttention(typed)).output;
  const ortF16: HalfTensor = (await selfAttention({ data: new Uint16Array(16), dims: [2, 8], type: 'F16' })).output;
  const self: HalfTensor | null = (await selfAttention(x, { needWeights: true })).attnWeights;
  const cache: KvCache = mha.createCache({ maxLength: 16, dtype: 'int8' });
  const stored: 'float32' | 'float16' | 'int8' = cache.dtype;
  const weights: 'float32' | 'float16' | 'bfloat16' | 'int8' | 'int4' = mha.config.weightsDtype;
  // @ts-expect-error: a cache has no bfloat16 storage
  mha.createCache({ maxLength: 16, dtype: 'bfloat16' });
  // @ts-expect-error: 'fp16' is transformers.js's option spelling, not a dtype here
  await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'fp16' });
  // @ts-expect-error: a Uint16Array needs its dtype
  await selfAttention({ data: new Uint16Array(16), shape: [2, 8] });
  return [tensor, out, sdpa, viaType, ortF16, self, stored, weights];
}
halves;
