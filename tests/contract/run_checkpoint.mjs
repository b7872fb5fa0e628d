// A checkpoint case (tests/fixtures/make_checkpoint_fixtures.py) the way a user loads one: its
// safetensors file through loadSafetensors(), loadStateDict({ layout, prefix, strict }), then
// self-attention over x without a mask, causal, and causal again through a KV cache fed in chunks,
// whose cache.read() must then give every position's keys and values. A case with positionIds
// passes them to every call (a chunk's rows of them to the cached ones).
import { compare } from './compare.mjs';
import { decodeCreate, decodeTensor } from './decode.mjs';
import { place, rows } from './run_decode.mjs';

/** The chunks the cached pass feeds (rows per call): a prompt, one token, the rest. */
const CHUNKS = [2, 1, 3];

/**
 * c: a case of checkpoints.json; bytes: its file's bytes. `create` is merged over c.create
 * ({ backend, gpu, threads, ... }). Resolves to { full, causal, cached, cacheKey, cacheValue }
 * (compare() results) and the module's backend.
 */
export async function runCheckpointCase(api, c, bytes, { create = {} } = {}) {
  const x = decodeTensor(c.x);
  const ids = c.positionIds && decodeTensor(c.positionIds);
  const positions = (at, n) => (ids ? { positionIds: at === 0 && n === ids.shape[1] ? ids : rows(ids, at, n) } : {});
  const mha = await api.MultiHeadAttention.create({ ...decodeCreate(c.create), ...create });
  try {
    mha.loadStateDict(api.loadSafetensors(bytes), c.load);
    const T = x.shape[1];
    const full = compare((await mha.forward(x, x, x, positions(0, T))).output, decodeTensor(c.full));
    const causal = compare((await mha.forward(x, x, x, { isCausal: true, ...positions(0, T) })).output, decodeTensor(c.causal));
    const [B, , E] = x.shape;
    const cache = mha.createCache({ batchSize: B, maxLength: T });
    const assembled = { data: new Float32Array(B * T * E), shape: [B, T, E] };
    let at = 0;
    for (const n of CHUNKS) {
      const chunk = rows(x, at, n);
      place(assembled, (await mha.forward(chunk, chunk, chunk, { cache, ...positions(at, n) })).output, at, n);
      at += n;
    }
    if (at !== T) throw new Error(`case ${c.name}: the chunks cover ${at} of ${T} rows`);
    const held = await cache.read();
    return {
      full, causal, cached: compare(assembled, decodeTensor(c.causal)),
      cacheKey: compare(held.key, decodeTensor(c.cacheKey)), cacheValue: compare(held.value, decodeTensor(c.cacheValue)),
      backend: mha.backend,
    };
  } finally {
    mha.dispose();
  }
}
