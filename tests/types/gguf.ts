// loadGguf() as a user writes it (tsc --noEmit, with usage.ts): tensors as stored or dequantised,
// metadata values by type, the typed error.
import { loadGguf, GgufError, type GgufBlockTensor, type GgufValue, type HalfTensor, type Tensor } from 'webattention';

function readLayer(bytes: Uint8Array) {
  const file = loadGguf(bytes);
  const q = file.get('blk.0.attn_q.weight');
  if (q && 'dtype' in q && (q.dtype === 'q4_0' || q.dtype === 'q8_0')) {
    const blocks: Uint8Array = (q as GgufBlockTensor).data;
    console.log(blocks.length, q.shape);
  }
  const v = file.get('blk.0.attn_v.weight') as HalfTensor | undefined;
  const heads: GgufValue | undefined = file.metadata.get('llama.attention.head_count');
  const type: string | undefined = file.types.get('blk.0.attn_q.weight');
  const version: 2 | 3 = file.version;
  const floats = loadGguf(bytes.buffer, { dequantize: true });
  const w: Tensor | undefined = floats.get('blk.0.attn_q.weight');
  const values: Float32Array | undefined = w?.data;
  // @ts-expect-error: dequantize is a boolean
  loadGguf(bytes, { dequantize: 'yes' });
  // @ts-expect-error: loadGguf takes bytes, not a path
  loadGguf('model.gguf');
  try {
    loadGguf(new Uint8Array(4));
  } catch (e) {
    if (e instanceof GgufError) console.log(e.argument, e.message);
  }
  return [v, heads, type, version, values, file.alignment];
}
readLayer;
