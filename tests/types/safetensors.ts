// loadSafetensors() and loadStateDict()'s options as a user writes them (tsc --noEmit, with
// usage.ts): the file's Map goes straight into loadStateDict().
import { MultiHeadAttention, loadSafetensors, saveSafetensors, SafetensorsError, type SafetensorsTensor } from 'webattention';

async function loadLayer(bytes: ArrayBuffer, fromNode: Uint8Array) {
  const file = loadSafetensors(bytes);
  const again = loadSafetensors(fromNode);
  const tensor: SafetensorsTensor | undefined = file.get('self_attn.in_proj_weight');
  const dtype: 'F32' | 'F16' | 'BF16' | undefined = tensor?.dtype;
  const format: string | undefined = file.metadata.get('format');
  const mha = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4 });
  mha.loadStateDict(file, { prefix: 'self_attn.', strict: false });
  mha.loadStateDict(again, { prefix: 'layers.0.self_attn.' });
  // @ts-expect-error: strict is a boolean
  mha.loadStateDict(file, { strict: 'no' });
  // A Qwen2 block from a Hugging Face checkpoint, and Gemma 2's score options.
  const qwen = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, numKvHeads: 2, bias: { q: true, k: true, v: true } });
  qwen.loadStateDict(file, { layout: 'hf', prefix: 'model.layers.0.self_attn.' });
  const gemma = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, bias: false, scale: 0.0625, softcap: 50 });
  gemma.loadStateDict(file, { layout: 'gpt2', strict: false });
  const softcap: number | null = gemma.config.softcap;
  const outBias: boolean = qwen.config.bias.out;
  const oss = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, sinks: true });
  const hasSinks: boolean = oss.config.sinks;
  const qwen3 = await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, bias: false, qkNorm: { eps: 1e-6 } });
  const eps: number | undefined = qwen3.config.qkNorm?.eps;
  // @ts-expect-error: layout is one of 'torch', 'hf', 'gpt2', 'bert'
  mha.loadStateDict(file, { layout: 'llama' });
  // @ts-expect-error: bias flags are booleans
  await MultiHeadAttention.create({ embedDim: 16, numHeads: 4, bias: { q: 1 } });
  // @ts-expect-error: loadSafetensors takes bytes, not a path
  loadSafetensors('model.safetensors');
  try {
    loadSafetensors(new Uint8Array(4));
  } catch (e) {
    if (e instanceof SafetensorsError) console.log(e.argument, e.message);
  }
  return [dtype, format, softcap, outBias, hasSinks, eps];
}
loadLayer;

// saveSafetensors(): tensors by name (an object or a Map), 16-bit ones with their dtype, and metadata.
function saveLayer(file: Map<string, SafetensorsTensor>): Uint8Array {
  const bytes: Uint8Array = saveSafetensors({
    'q_proj.weight': { data: new Float32Array(4), shape: [2, 2] },
    'k_proj.weight': { data: new Uint16Array(4), shape: [2, 2], dtype: 'bfloat16' },
  }, { metadata: { format: 'pt' } });
  saveSafetensors(file, { metadata: new Map([['format', 'pt']]) });
  // @ts-expect-error: 16-bit data needs its dtype
  saveSafetensors({ w: { data: new Uint16Array(4), shape: [4] } });
  // @ts-expect-error: metadata values are strings
  saveSafetensors({}, { metadata: { layers: 2 } });
  return bytes;
}
saveLayer;
