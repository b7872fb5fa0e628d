// cache.truncate() and cache.fork() (issue 38) through the public API, against a cache that never
// saw the dropped tokens (bit for bit, same backend) and against the float64 reference of the
// tokens it holds. Each sequence is fed without awaiting between calls, and truncate() and fork()
// are made right after: on WebGPU they then take their turn in the cache's queue (kv_cache.js),
// on WASM every call has run already. tests/js/cache_rollback.test.js and
// tests/webgpu/node_cache_rollback.test.mjs run them.
import { compare, sameBits } from './compare.mjs';
import { filled, seededStateDict } from './random.mjs';
import { mhaReference } from './reference.mjs';
import { place, rows } from './run_decode.mjs';

export const ROLLBACK_CREATE = { embedDim: 16, numHeads: 4 };
const B = 2;
const CHUNK = 16;

/**
 * Caches to cut back: kept tokens, then dropped ones, then new ones after truncate(kept); a
 * window's ring (72 slots at window 8) wraps before the cut, so the lowest length it accepts is
 * above 0. A fork takes the kept tokens, then each copy its own new ones.
 */
export const ROLLBACK_LAYOUTS = [
  { cache: { maxLength: 40 }, kept: 10, dropped: 21, more: 5 },
  { cache: { maxLength: 40, dtype: 'float16' }, kept: 17, dropped: 3, more: 4 },
  { cache: { maxLength: 40, dtype: 'int8' }, kept: 9, dropped: 12, more: 3 },
  { cache: { window: 8 }, kept: 90, dropped: 40, more: 6 },
];

/** Rows [at, at + n) of x fed to `cache` in calls of at most CHUNK rows, not awaited: their results. */
export function feed(mha, cache, x, at, n) {
  const calls = [];
  for (let i = at; i < at + n; i += CHUNK) {
    const chunk = rows(x, i, Math.min(CHUNK, at + n - i));
    calls.push(mha.forward(chunk, chunk, chunk, { cache }));
  }
  return calls;
}

/** The outputs of `calls` (from feed()) as one tensor [B, their rows, E], in order. */
async function outputs(calls) {
  const parts = (await Promise.all(calls)).map((r) => r.output);
  const n = parts.reduce((a, o) => a + o.shape[1], 0);
  const full = { data: new Float32Array(B * n * parts[0].shape[2]), shape: [B, n, parts[0].shape[2]] };
  let at = 0;
  for (const o of parts) {
    place(full, o, at, o.shape[1]);
    at += o.shape[1];
  }
  return full;
}

/** x's rows [0, a) followed by y's rows [from, from + n): one sequence [B, a + n, E]. */
function joined(x, a, y, from, n) {
  const E = x.shape[2];
  const out = new Float32Array(B * (a + n) * E);
  for (let b = 0; b < B; b++) {
    out.set(rows(x, 0, a).data.subarray(b * a * E, (b + 1) * a * E), b * (a + n) * E);
    out.set(rows(y, from, n).data.subarray(b * n * E, (b + 1) * n * E), (b * (a + n) + a) * E);
  }
  return { data: out, shape: [B, a + n, E] };
}

/** The float64 reference of a cache holding `x` [B, T, E]: the outputs of its last n rows. */
export function reference(mha, sd, x, n, { window = 0, dtype = 'float32' }) {
  const T = x.shape[1];
  const mask = window ? { data: Float32Array.from({ length: T * T }, (_, k) => (k % T > Math.floor(k / T) - window ? 0 : -Infinity)), shape: [T, T] } : undefined;
  const { output } = mhaReference(mha.config, sd, x, x, x, { isCausal: true, attnMask: mask }, dtype);
  return rows({ data: Float32Array.from(output), shape: [B, T, 16] }, T - n, n);
}

/** body(mha, sd) on a module of ROLLBACK_CREATE and `create` with seeded weights; disposed after. */
export async function withModule(api, create, body) {
  const mha = await api.MultiHeadAttention.create({ ...ROLLBACK_CREATE, ...create });
  try {
    const sd = seededStateDict(mha.stateDictShapes, 50);
    mha.loadStateDict(sd);
    return await body(mha, sd);
  } finally {
    mha.dispose();
  }
}

/**
 * Feeds kept + dropped tokens, truncate(kept), then the new ones. Resolves to { truncated, fresh
 * (a cache that only saw the kept and new tokens), reference (float64), lengths: [after the
 * truncate, at the end], read: [truncated's, fresh's] }.
 */
export function truncateRun(api, { cache: options, kept, dropped, more }, create = {}) {
  return withModule(api, create, async (mha, sd) => {
    const x = { data: filled(B * (kept + dropped + more) * 16, 91), shape: [B, kept + dropped + more, 16] };
    const cache = mha.createCache({ batchSize: B, ...options });
    const prefill = [...feed(mha, cache, x, 0, kept), ...feed(mha, cache, x, kept, dropped)];
    cache.truncate(kept);
    const lengths = [cache.length];
    const truncated = outputs(feed(mha, cache, x, kept + dropped, more));
    await Promise.all(prefill);
    const y = joined(x, kept, x, kept + dropped, more);
    const fresh = mha.createCache({ batchSize: B, ...options });
    await Promise.all(feed(mha, fresh, y, 0, kept));
    const result = { truncated: await truncated, fresh: await outputs(feed(mha, fresh, y, kept, more)) };
    lengths.push(cache.length);
    return { ...result, lengths, read: [await cache.read(), await fresh.read()], reference: reference(mha, sd, y, more, options) };
  });
}

/**
 * Feeds kept tokens, fork(), then other new tokens to each. Resolves to { source, fork, fresh:
 * [source's, fork's] (caches fed the same tokens from the start), reference: [two float64 runs],
 * dtype (the fork's) }.
 */
export function forkRun(api, { cache: options, kept, more }, create = {}) {
  return withModule(api, create, async (mha, sd) => {
    const T = kept + more;
    const x = { data: filled(B * T * 16, 92), shape: [B, T, 16] };
    const z = joined(x, kept, { data: filled(B * more * 16, 93), shape: [B, more, 16] }, 0, more);
    const cache = mha.createCache({ batchSize: B, ...options });
    const prefill = feed(mha, cache, x, 0, kept);
    const fork = cache.fork();
    const result = { source: outputs(feed(mha, cache, x, kept, more)), fork: outputs(feed(mha, fork, z, kept, more)) };
    await Promise.all(prefill);
    const fresh = [x, z].map(async (seq) => {
      const c = mha.createCache({ batchSize: B, ...options });
      await Promise.all(feed(mha, c, seq, 0, kept));
      return outputs(feed(mha, c, seq, kept, more));
    });
    return {
      source: await result.source, fork: await result.fork, fresh: await Promise.all(fresh), dtype: fork.dtype,
      reference: [x, z].map((seq) => reference(mha, sd, seq, more, options)),
    };
  });
}

/** compare() of a run's output against its float64 reference, for a message: null when within tolerance. */
export function outsideTolerance(actual, expected) {
  const r = compare(actual, expected);
  return r.ok ? null : r.detail;
}

/** What f() throws, or null. */
export const caught = (f) => {
  try {
    f();
    return null;
  } catch (e) {
    return e;
  }
};

/** truncate() lengths a window cache of 90 positions (ring 72, window 8: lowest 26) refuses. */
export const HOSTILE_LENGTHS = [-1, 91, 1.5, NaN, Infinity, '10', null, undefined, [30], new Int32Array([30, 91]), 25, 0];

/**
 * Misuse: { refusals: [{ length, error }] (HOSTILE_LENGTHS on a window cache of 90 positions),
 * length (after them), unchanged (its next call's output equals a twin's that saw no misuse, bit
 * for bit), lowest (truncate(26) accepted), disposed: [truncate(0)'s, fork()'s errors on a
 * disposed cache], released (a fork's length error after its module was disposed) }.
 */
export function hostileRun(api, create = {}) {
  return withModule(api, create, async (mha) => {
    const x = { data: filled(B * 93 * 16, 94), shape: [B, 93, 16] };
    const [cache, twin] = [0, 1].map(() => mha.createCache({ batchSize: B, window: 8 }));
    await Promise.all([...feed(mha, cache, x, 0, 90), ...feed(mha, twin, x, 0, 90)]);
    const refusals = HOSTILE_LENGTHS.map((length) => ({ length, error: caught(() => cache.truncate(length)) }));
    const length = cache.length;
    const step = rows(x, 90, 3);
    const [a, b] = await Promise.all([cache, twin].map((c) => mha.forward(step, step, step, { cache: c })));
    const unchanged = sameBits(a.output.data, b.output.data);
    const lowest = caught(() => cache.truncate(93 - 72 + 8));
    cache.dispose();
    const disposed = [caught(() => cache.truncate(0)), caught(() => cache.fork())];
    const fork = twin.fork();
    mha.dispose();
    return { refusals, length, unchanged, lowest, disposed, released: caught(() => fork.length) };
  });
}

/**
 * A dropped position whose keys and values are Inf (an input row of Inf), its slot not written
 * again before the next call: { truncated, fresh } outputs of that call, which must be the same
 * bits (a stale slot a kernel reads with a weight of 0 would make them NaN).
 */
export function poisonedTruncateRun(api, create = {}) {
  return withModule(api, create, async (mha) => {
    const x = { data: filled(B * 12 * 16, 95), shape: [B, 12, 16] };
    const poisoned = { data: x.data.slice(), shape: x.shape };
    poisoned.data.fill(Infinity, 11 * 16, 12 * 16);  // batch 0, row 11
    const [cache, fresh] = [0, 1].map(() => mha.createCache({ batchSize: B, maxLength: 16 }));
    await Promise.all([...feed(mha, cache, poisoned, 0, 12), ...feed(mha, fresh, x, 0, 10)]);
    cache.truncate(10);
    return { truncated: await outputs(feed(mha, cache, x, 10, 1)), fresh: await outputs(feed(mha, fresh, x, 10, 1)) };
  });
}

/**
 * fork() then dispose() of its source at once, while the calls before them may still be queued
 * (dispose() lets the running one finish and rejects the rest): the fork holds what the source
 * held at the fork's turn, every position those calls appended. { fork, fresh }: read() of the
 * fork and of a cache fed the same tokens as the calls that succeeded.
 */
export function forkThenDisposeRun(api, create = {}) {
  return withModule(api, create, async (mha) => {
    const x = { data: filled(B * 20 * 16, 96), shape: [B, 20, 16] };
    const cache = mha.createCache({ batchSize: B, maxLength: 24 });
    const calls = feed(mha, cache, x, 0, 20);
    const fork = cache.fork();
    cache.dispose();
    const appended = (await Promise.allSettled(calls)).filter((c) => c.status === 'fulfilled').map((c) => c.value.output.shape[1]);
    const fresh = mha.createCache({ batchSize: B, maxLength: 24 });
    await Promise.all(feed(mha, fresh, x, 0, appended.reduce((a, n) => a + n, 0)));
    return { fork: await fork.read(), fresh: await fresh.read() };
  });
}
