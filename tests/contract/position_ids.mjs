// forward()'s positionIds on any backend (tests/js/position_ids.test.js on every WASM module and
// the pool, tests/webgpu/node_position_ids.test.mjs on WebGPU): the ids a call would use anyway
// change no bit, and hostile ids are typed errors that leave the module and its cache as they
// were. The float64 truth of ids that do move rows is the checkpoint fixtures' (run_checkpoint.mjs).
import { filled, seededStateDict } from './random.mjs';
import { rows } from './run_decode.mjs';

/** The module and sequence: GQA, qk-norm before RoPE, a partial rotary dim, a window cache. */
export const POSITION_CASE = {
  create: { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: { dim: 2 }, qkNorm: {} },
  // The window cache wraps (its ring has fewer than T slots), and the first chunk is more rows
  // than one of its passes takes (the ids are cut with the rows).
  B: 2, T: 90, window: 4, chunks: [80, 1, 9],
};

/** A module of the case (options merged with `create`) with seeded weights. */
async function seededModule(api, create) {
  const mha = await api.MultiHeadAttention.create({ ...POSITION_CASE.create, ...create });
  mha.loadStateDict(seededStateDict(mha.stateDictShapes, 60));
  return mha;
}

/** The ids a call of L rows after `first` cached positions uses by default: first + i, per batch. */
export const defaultIds = (B, L, first = 0) =>
  ({ data: Int32Array.from({ length: B * L }, (_, n) => first + (n % L)), shape: [B, L] });

const sequence = (mha) => {
  const { B, T } = POSITION_CASE;
  return { data: filled(B * T * mha.config.embedDim, 91), shape: [B, T, mha.config.embedDim] };
};

/**
 * The case's calls without positionIds and again with the ids they use by default: a plain causal
 * forward with per-head weights, an unbatched one, then the sequence through a window cache in chunks, and the
 * cache's read(). Resolves to [{ what, without, with }] of Float32Arrays, to be equal bit for bit.
 */
export async function defaultIdsPairs(api, create = {}) {
  const { B, T, window, chunks } = POSITION_CASE;
  const mha = await seededModule(api, create);
  try {
    const x = sequence(mha);
    const options = { isCausal: true, needWeights: true, averageAttnWeights: false };
    const [plain, explicit] = [await mha.forward(x, x, x, { ...options, positionIds: null }),
      await mha.forward(x, x, x, { ...options, positionIds: defaultIds(B, T) })];
    const pairs = [{ what: 'output', without: plain.output.data, with: explicit.output.data },
      { what: 'attnWeights', without: plain.attnWeights.data, with: explicit.attnWeights.data }];
    // Unbatched: query [L, E], ids [L] (as an onnxruntime-web tensor: dims, type).
    const E = mha.config.embedDim;
    const one = { data: x.data.subarray(0, T * E), shape: [T, E] };
    const unbatchedIds = { data: defaultIds(1, T).data, dims: [T], type: 'int32' };
    pairs.push({ what: 'unbatched output', without: (await mha.forward(one, one, one)).output.data,
      with: (await mha.forward(one, one, one, { positionIds: unbatchedIds })).output.data });
    const caches = [mha.createCache({ batchSize: B, window }), mha.createCache({ batchSize: B, window })];
    let at = 0;
    for (const n of chunks) {
      const chunk = rows(x, at, n);
      const step = (cache, ids) => mha.forward(chunk, chunk, chunk, { cache, ...(ids ? { positionIds: ids } : {}) });
      const [a, b] = [await step(caches[0]), await step(caches[1], defaultIds(B, n, at))];
      pairs.push({ what: `cached rows ${at}…${at + n - 1}`, without: a.output.data, with: b.output.data });
      at += n;
    }
    const [readA, readB] = [await caches[0].read(), await caches[1].read()];
    pairs.push({ what: 'cache keys', without: readA.key.data, with: readB.key.data },
      { what: 'cache values', without: readA.value.data, with: readB.value.data });
    return pairs;
  } finally {
    mha.dispose();
  }
}

/** A rotary table of TABLE_ROWS positions (cos and sin of seeded angles) for the hostile calls. */
export const TABLE_ROWS = 8;
const table = () => {
  const angles = filled(TABLE_ROWS, 5, 3);
  return { cos: { data: angles.map(Math.cos), shape: [TABLE_ROWS, 1] }, sin: { data: angles.map(Math.sin), shape: [TABLE_ROWS, 1] } };
};

/**
 * Hostile positionIds for a call of B batches and L rows after `first` cached positions, on a
 * module whose rotary table has TABLE_ROWS rows: what each is and the error class it must raise.
 */
export const HOSTILE_POSITION_IDS = [
  { what: 'a negative id', error: 'OptionError', ids: (B, L, first) => withId(defaultIds(B, L, first), -1) },
  { what: 'an id past the table', error: 'OptionError', ids: (B, L, first) => withId(defaultIds(B, L, first), TABLE_ROWS) },
  { what: 'the largest int32', error: 'OptionError', ids: (B, L, first) => withId(defaultIds(B, L, first), 2 ** 31 - 1) },
  { what: 'Float32Array data', error: 'DTypeError', ids: (B, L) => ({ data: new Float32Array(B * L), shape: [B, L] }) },
  { what: 'a plain array', error: 'DTypeError', ids: (B, L) => ({ data: Array.from({ length: B * L }, () => 0), shape: [B, L] }) },
  { what: 'a bare Int32Array', error: 'DTypeError', ids: (B, L) => new Int32Array(B * L) },
  { what: 'one row too many', error: 'ShapeError', ids: (B, L) => ({ data: new Int32Array(B * (L + 1)), shape: [B, L + 1] }) },
  { what: 'a shape its data does not fill', error: 'ShapeError', ids: (B, L) => ({ data: new Int32Array(B * L - 1), shape: [B, L] }) },
  { what: 'rank 1 for a batched call', error: 'ShapeError', ids: (B, L) => ({ data: new Int32Array(B * L), shape: [B * L] }) },
  { what: 'an ORT tensor of another type', error: 'DTypeError', ids: (B, L) => ({ data: new Int32Array(B * L), dims: [B, L], type: 'int64' }) },
];

// Ids with their last value replaced.
function withId(ids, value) {
  ids.data[ids.data.length - 1] = value;
  return ids;
}

/**
 * The hostile ids of HOSTILE_POSITION_IDS, each in a cached step after a short prompt,
 * on a table module (options merged with `create`). Resolves to { refused: [{ what, expected,
 * got: { name, argument } | null }], lengths: the cache's length after each refusal, readBefore
 * and readAfter (read() before and after them), next and fresh: the output of the next chunk on
 * this cache and on a module that never saw a hostile call }.
 */
export async function hostileIdsRun(api, create = {}) {
  const { B, T } = POSITION_CASE;
  const [first, next] = [3, 2];  // a prompt and a step, inside the table's TABLE_ROWS positions
  const tableCreate = { rotary: { table: table() }, ...create };
  const [mha, fresh] = [await seededModule(api, tableCreate), await seededModule(api, tableCreate)];
  try {
    const x = sequence(mha);
    const [cache, freshCache] = [mha.createCache({ batchSize: B, maxLength: T }), fresh.createCache({ batchSize: B, maxLength: T })];
    const prompt = rows(x, 0, first);
    await mha.forward(prompt, prompt, prompt, { cache });
    await fresh.forward(prompt, prompt, prompt, { cache: freshCache });
    const readBefore = await cache.read();
    const chunk = rows(x, first, next);
    const refused = [];
    const lengths = [];
    for (const { what, error, ids } of HOSTILE_POSITION_IDS) {
      let got = null;
      try {
        await mha.forward(chunk, chunk, chunk, { cache, positionIds: ids(B, next, first) });
      } catch (e) {
        got = { name: e.name, argument: e.argument, message: e.message };
      }
      refused.push({ what, expected: error, got });
      lengths.push(cache.length);
    }
    const readAfter = await cache.read();
    const step = (m, c) => m.forward(chunk, chunk, chunk, { cache: c, positionIds: defaultIds(B, next, first) });
    return { refused, lengths, readBefore, readAfter, next: (await step(mha, cache)).output, fresh: (await step(fresh, freshCache)).output };
  } finally {
    mha.dispose();
    fresh.dispose();
  }
}

/**
 * Calls positionIds cannot apply to, each with the error it must raise: a module without rotary,
 * and cross-attention without a cache (S ≠ L: a key row has no id). Resolves to
 * [{ what, expected, got: { name, argument } | null }].
 */
export async function misplacedIdsRun(api, create = {}) {
  const out = [];
  const attempt = async (what, expected, createOptions, S) => {
    const mha = await seededModule(api, { ...createOptions, ...create });
    try {
      const E = mha.config.embedDim;
      const q = { data: filled(2 * 3 * E, 3), shape: [2, 3, E] };
      const kv = { data: filled(2 * S * E, 4), shape: [2, S, E] };
      let got = null;
      try {
        await mha.forward(q, kv, kv, { positionIds: defaultIds(2, 3) });
      } catch (e) {
        got = { name: e.name, argument: e.argument, message: e.message };
      }
      out.push({ what, expected, got });
    } finally {
      mha.dispose();
    }
  };
  await attempt('a module without rotary', 'OptionError', { rotary: undefined, qkNorm: undefined }, 3);
  await attempt('S = 5 keys for L = 3 ids without a cache', 'ShapeError', {}, 5);
  return out;
}
