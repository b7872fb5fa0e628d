// loadGguf() as a user writes it (tsc --noEmit, with usage.ts): tensors as stored or dequantised,
// metadata values by type, the typed error.
import { loadGguf, GgufError, MultiHeadAttention, type GgufBlockTensor, type GgufValue, type HalfTensor, type MatMulNBitsTensor, type QuantisedTensor, type Tensor } from 'webattention';

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

// Blocks as stored into loadStateDict() and fromGguf() (issue 37).
async function quantised(bytes: Uint8Array, B: Uint8Array, scales: Uint16Array) {
  const file = loadGguf(bytes);
  const mha = await MultiHeadAttention.fromGguf(file, { layer: 0, threads: 1 });
  mha.loadStateDict(file, { layout: 'gguf', prefix: 'blk.0.' });
  const layout: 'gguf' | 'hf' | 'gpt2' | 'bert' | undefined = mha.checkpoint?.layout;
  const w: MatMulNBitsTensor = { dtype: 'int4', data: B, scales: { data: scales, dtype: 'float16' }, blockSize: 64, shape: [64, 64] };
  const q: QuantisedTensor = { dtype: 'q4_0', data: B, shape: [64, 64] };
  mha.loadStateDict({ 'out_proj.weight': w, in_proj_weight: q });
  // @ts-expect-error: MatMulNBits blocks are 32, 64, 128 or 256
  const bad: MatMulNBitsTensor = { ...w, blockSize: 48 };
  // @ts-expect-error: fromGguf needs the layer
  await MultiHeadAttention.fromGguf(file, {});
  return [layout, bad];
}
quantised;
