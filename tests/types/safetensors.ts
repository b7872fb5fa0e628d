// loadSafetensors() and loadStateDict()'s options as a user writes them (tsc --noEmit, with
// usage.ts): the file's Map goes straight into loadStateDict().
import { MultiHeadAttention, loadSafetensors, SafetensorsError, type SafetensorsTensor } from 'webattention';

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
  // @ts-expect-error: loadSafetensors takes bytes, not a path
  loadSafetensors('model.safetensors');
  try {
    loadSafetensors(new Uint8Array(4));
  } catch (e) {
    if (e instanceof SafetensorsError) console.log(e.argument, e.message);
  }
  return [dtype, format];
}
loadLayer;
