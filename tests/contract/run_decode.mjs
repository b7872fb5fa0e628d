// A 'decode' fixture case (tests/fixtures/make_decode_fixtures.py) through the public API, the way
// a decode loop calls it: one KV cache, the sequence fed chunk by chunk, each chunk's rows placed
// where the full causal forward has them so that the contract's comparator checks them all at
// once. Then the cache is reset and the sequence fed again: it must give the same bits (or, on a
// GPU that picks kernels by measurement, the reference's values: see repeatDiffers).
import { checkResult, sameBits } from './compare.mjs';

// Rows [at, at + n) of every batch of a [B, T, ...] tensor, as a tensor of its own (also run_checkpoint.mjs).
export function rows({ data, shape }, at, n) {
  const [B, T, ...rest] = shape;
  const width = rest.reduce((a, b) => a * b, 1);
  const out = new data.constructor(B * n * width);
  for (let b = 0; b < B; b++) out.set(data.subarray((b * T + at) * width, (b * T + at + n) * width), b * n * width);
  return { data: out, shape: [B, n, ...rest] };
}

// Columns [0, n) of every row of a [B, T] mask.
function prefix({ data, shape: [B, T] }, n) {
  const out = new data.constructor(B * n);
  for (let b = 0; b < B; b++) out.set(data.subarray(b * T, b * T + n), b * n);
  return { data: out, shape: [B, n] };
}

// Places a chunk's rows (output [B, n, E], weights [B, (h,) n, at + n]) at rows [at, at + n) of
// the full tensor ([B, T, E], [B, (h,) T, T]); weight columns past at + n stay 0, as causal has them.
export function place(full, { data, shape }, at, n) {
  const cols = shape[shape.length - 1];
  const groups = data.length / (n * cols);  // B, or B·h
  const [fullRows, fullCols] = full.shape.slice(-2);
  for (let g = 0; g < groups; g++) {
    for (let i = 0; i < n; i++) {
      full.data.set(data.subarray((g * n + i) * cols, (g * n + i + 1) * cols), (g * fullRows + at + i) * fullCols);
    }
  }
}

/** One pass over the sequence: { output, attnWeights } assembled, or throws the package's error. */
async function feed(mha, cache, c) {
  const { query, key = query, value = query } = c.inputs;
  const { keyPaddingMask, ...options } = c.options;
  const [B, T] = query.shape;
  const out = { data: new Float32Array(B * T * c.create.embedDim), shape: [B, T, c.create.embedDim] };
  const weights = c.expected.attnWeights && { data: new Float32Array(c.expected.attnWeights.data.length), shape: c.expected.attnWeights.shape };
  let at = 0;
  for (const n of c.chunks) {
    const q = rows(query, at, n);
    const sameInput = key === query && value === query;
    const k = sameInput ? q : rows(key, at, n);
    const v = sameInput ? q : rows(value, at, n);
    const mask = keyPaddingMask && prefix(keyPaddingMask, at + n);
    const r = await mha.forward(q, k, v, { ...options, cache, ...(mask ? { keyPaddingMask: mask } : {}) });
    if (cache.length !== at + n) throw new Error(`cache.length ${cache.length} after ${at + n} positions`);
    place(out, r.output, at, n);
    if (weights) place(weights, r.attnWeights, at, n);
    at += n;
  }
  return { output: out, attnWeights: weights ?? null };
}

/** The case's misuse check: one position past maxLength throws CacheError and leaves the cache. */
async function checkFull(mha, cache, c) {
  if (c.cache.maxLength !== c.chunks.reduce((a, b) => a + b, 0)) return;
  const one = rows(c.inputs.query, 0, 1);
  const other = c.inputs.key ? rows(c.inputs.key, 0, 1) : one;
  const value = c.inputs.value ? rows(c.inputs.value, 0, 1) : one;
  const before = cache.length;
  try {
    await mha.forward(one, other, value, { cache });
  } catch (e) {
    if (e.name !== 'CacheError') throw e;
    if (cache.length !== before) throw new Error(`a refused append changed cache.length to ${cache.length}`);
    return;
  }
  throw new Error('appending past maxLength did not throw');
}

/** Runs a decode case; resolves to { output, attnWeights } like forward() of the whole sequence. */
export async function runDecode(api, c, { create = {}, onModule } = {}) {
  const mha = await api.MultiHeadAttention.create({ ...c.create, ...create });
  try {
    mha.loadStateDict(c.stateDict);
    const cache = mha.createCache(c.cache);
    const first = await feed(mha, cache, c);
    await checkFull(mha, cache, c);
    cache.reset();
    const again = await feed(mha, cache, c);
    const differs = repeatDiffers(mha, c, first, again);
    if (differs) throw new Error(`a second pass after reset() differs: ${differs}`);
    onModule?.(mha);
    cache.dispose();
    return first;
  } finally {
    mha.dispose();
  }
}

// Why the pass after reset() is not the first one's, or null. Bit for bit, except where the
// module's GPU selects kernel variants by measurement (mha.gpuProfile().measuring: a hardware
// adapter): there the second pass may run another variant of a kernel, which sums in another
// order, so it is held to the reference's tolerance instead. A cache that kept stale state
// fails either way.
function repeatDiffers(mha, c, first, again) {
  if (mha.backend === 'webgpu' && mha.gpuProfile().measuring) {
    const r = checkResult(c, again);
    return r.ok ? null : `against the reference: ${r.detail}`;
  }
  for (const key of ['output', 'attnWeights']) {
    const a = first[key]?.data, b = again[key]?.data;
    if (a && !sameBits(a, b)) return `${key}: not the same bits`;
  }
  return null;
}
