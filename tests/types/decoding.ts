// The incremental-decoding API (numKvHeads, rotary, createCache, forward's cache) as a user
// writes it, checked by `tsc --noEmit` against web/index.d.ts.
import { MultiHeadAttention, KvCache, CacheError, type Tensor } from 'webattention';

async function decode(prompt: Tensor, token: Tensor) {
  const mha = await MultiHeadAttention.create({
    embedDim: 128, numHeads: 4, numKvHeads: 2, rotary: { base: 10000, interleaved: false, dim: 32 },
  });
  const cache: KvCache = mha.createCache({ batchSize: 1, maxLength: 512 });
  const ring = mha.createCache({ window: 128 });
  await mha.forward(prompt, prompt, prompt, { cache });
  const { output } = await mha.forward(token, token, token, { cache: ring, needWeights: true });
  await mha.forward(token, token, token, { cache, positionIds: { data: new Int32Array([7]), shape: [1, 1] } });
  await mha.forward(token, token, token, { positionIds: { data: new Int32Array([7]), dims: [1, 1], type: 'int32' } });
  // @ts-expect-error: position ids are an Int32Array
  await mha.forward(token, token, token, { positionIds: { data: new Float32Array([7]), shape: [1, 1] } });
  const length: number = cache.length + ring.window + ring.maxLength + ring.batchSize;
  const dim: number | undefined = mha.config.rotary?.dim;
  const { key, value, firstPosition } = await ring.read();
  const presentShape: number[] = [...key.shape, ...value.shape, firstPosition];
  // @ts-expect-error: read() resolves to a promise, not the tensors
  cache.read().key;
  cache.truncate(3);
  const tree = { data: new Uint8Array([0, 1, 0, 0]), shape: [2, 2] };
  await mha.forward(prompt, prompt, prompt, { cache, attnMask: tree, positionIds: { data: new Int32Array([3, 4]), shape: [1, 2] } });
  cache.keep([0]);
  cache.keep(new Int32Array([0, 1]));
  // @ts-expect-error: indices, not one count
  cache.keep(2);
  const fork: KvCache = ring.fork();
  fork.dispose();
  cache.truncate([3, 3]);  // one length per row
  const lengths: number[] = cache.lengths;
  await mha.forward(token, token, token, { cache, rows: [0], positionIds: null });
  const step = new Float32Array(128);
  const into: Float32Array = (await mha.forward(token, token, token, { cache, out: step })).output.data;
  // @ts-expect-error: out is a Float32Array (Uint16Array for 16-bit inputs)
  await mha.forward(token, token, token, { cache, out: new Float64Array(128) });
  // @ts-expect-error: rows are a list of the cache's rows
  await mha.forward(token, token, token, { cache, rows: 0 });
  // @ts-expect-error: truncate takes numbers
  cache.truncate(['3']);
  console.log(lengths, into);
  cache.reset();
  cache.dispose();
  try {
    await mha.forward(token, token, token, { cache });
  } catch (e) {
    if (e instanceof CacheError) console.log(e.argument);
  }
  const scaled = await MultiHeadAttention.create({
    embedDim: 8, numHeads: 2, rotary: { scaling: { type: 'llama3', factor: 8, originalMaxPositions: 8192 } },
  });
  const factor: number | undefined = scaled.config.rotary?.scaling?.factor;
  const cos = { data: new Float32Array(8), shape: [4, 2] };
  const tabled = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, rotary: { table: { cos, sin: cos }, interleaved: true } });
  const rows: number | undefined = tabled.config.rotary?.table?.positions;
  // @ts-expect-error: scaling types are 'linear' and 'llama3'
  await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, rotary: { scaling: { type: 'yarn', factor: 2 } } });
  // @ts-expect-error: rotary options are base, interleaved and dim
  await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, rotary: { theta: 1 } });
  // @ts-expect-error: createCache takes an options object
  mha.createCache(512);
  // @ts-expect-error: KvCache is made by createCache()
  new KvCache();
  return [output, length, dim, presentShape, factor, rows];
}
decode;

// Cross-attention: an encoder's keys and values projected once, attended to at every step.
async function crossAttend(encoderOutput: Tensor, token: Tensor, padding: Uint8Array) {
  const mha = await MultiHeadAttention.create({ embedDim: 64, numHeads: 4 });
  const encoded: KvCache = await mha.encode(encoderOutput, encoderOutput, { dtype: 'float16' });
  const isEncoded: boolean = encoded.encoded;
  const { output } = await mha.forward(token, null, null, { cache: encoded, keyPaddingMask: { data: padding, shape: [1, encoded.length] } });
  // @ts-expect-error: null key and value only with a cache
  await mha.forward(token, null, null);
  return [isEncoded, output];
}
