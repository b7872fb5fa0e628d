// Compiled with `tsc --noEmit` (tests/types/tsconfig.json): the typed overloads (attnWeights is a
// Tensor with needWeights: true, null without), { data, dims } tensors as onnxruntime-web and
// transformers.js make them, configure() and LoadError. Each @ts-expect-error must stay an
// error, so these fail if the types get looser.
import {
  MultiHeadAttention, scaledDotProductAttention, selfAttention, configure, LoadError,
  type Tensor, type DimsTensor,
} from 'webattention';

async function weights(mha: MultiHeadAttention, q: Tensor, flag: boolean) {
  const withWeights: Tensor = (await mha.forward(q, q, q, { needWeights: true, isCausal: true })).attnWeights;
  const none: null = (await mha.forward(q, q, q)).attnWeights;
  const noneEither: null = (await mha.forward(q, q, q, { needWeights: false })).attnWeights;
  const maybe: Tensor | null = (await mha.forward(q, q, q, { needWeights: flag })).attnWeights;
  // @ts-expect-error: without needWeights: true the weights may be null
  const notSure: Tensor = (await mha.forward(q, q, q, { needWeights: flag })).attnWeights;

  const sdpa: Tensor = (await scaledDotProductAttention(q, q, q, { needWeights: true, scale: 0.5 })).attnWeights;
  const sdpaNone: null = (await scaledDotProductAttention(q, q, q)).attnWeights;
  // @ts-expect-error: no weights were asked for
  const sdpaWrong: Tensor = (await scaledDotProductAttention(q, q, q, { isCausal: true })).attnWeights;

  const self: Tensor = (await selfAttention(q, { needWeights: true })).attnWeights;
  const selfOld: Tensor = (await selfAttention(q, { returnWeights: true })).attnWeights;
  const selfNone: null = (await selfAttention(q)).attnWeights;
  // @ts-expect-error: selfAttention's weights flag is needWeights (or the deprecated returnWeights)
  await selfAttention(q, { weights: true });
  return [withWeights, none, noneEither, maybe, notSure, sdpa, sdpaNone, sdpaWrong, self, selfOld, selfNone];
}
weights;

async function dimsTensors(mha: MultiHeadAttention) {
  // onnxruntime-web's / transformers.js's tensor shape: dims and type.
  const x: DimsTensor = { data: new Float32Array(2 * 3 * 16), dims: [2, 3, 16], type: 'float32' };
  const mask: DimsTensor<Uint8Array> = { data: new Uint8Array(6), dims: [2, 3], type: 'bool' };
  const { output } = await mha.forward(x, x, x, { keyPaddingMask: mask });
  await selfAttention({ data: new Float32Array(6), dims: [3, 2] });
  // @ts-expect-error: an int64 tensor is not an input
  await selfAttention({ data: new Float32Array(6), dims: [3, 2], type: 'int64' });
  // @ts-expect-error: a float32 tensor's type is 'float32'
  await mha.forward(x, x, x, { keyPaddingMask: { data: new Uint8Array(6), dims: [2, 3], type: 'float32' } });
  return output.shape;
}
dimsTensors;

configure({ wasmPaths: 'https://cdn.example/webattention/web/dist/' });
configure({ wasmPaths: { 'webattention_core.wasm': '/assets/core.wasm' } });
configure({ wasmPaths: null });
// @ts-expect-error: wasmPaths is a URL string or a map of URLs
configure({ wasmPaths: 42 });
// @ts-expect-error: unknown option
configure({ wasmPath: '/x/' });

function onError(e: unknown) {
  if (e instanceof LoadError) console.log(e.argument, e.message);
}
onError;
