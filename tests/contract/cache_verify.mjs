// Speculative decoding's verification (issue 38) through the public API: forward() with a cache
// and a verification attnMask among the new positions (a tree of drafts, positionIds their depths)
// equals a separate causal run per branch; cache.keep(indices) leaves a cache that equals a fresh
// run over the kept tokens alone at consecutive positions (read() included), against the same
// backend and the float64 reference. Calls are not awaited between them: on WebGPU keep() then
// takes its turn in the cache's queue (kv_cache.js). tests/js/cache_verify.test.js and
// tests/webgpu/node_cache_verify.test.mjs run them.
import { compare, sameBits } from './compare.mjs';
import { filled } from './random.mjs';
import { caught, feed as feedFrom, reference, withModule } from './cache_rollback.mjs';
import { mhaReference } from './reference.mjs';
import { rows } from './run_decode.mjs';

// The modules are cache_rollback.mjs's (E 16, 4 heads) with each layout's options.
const B = 2;
const E = 16;
const feed = (mha, cache, x, n) => feedFrom(mha, cache, x, 0, n);
const PREFIX = 5;

/**
 * The modules and caches: RoPE (the float64 reference models unscaled θ, with as many K/V heads as
 * query heads), f16 and int8 storage, a window whose ring has wrapped before the drafts (prefix
 * 90 at window 8: ring 72), and the mask's forms: boolean [L, L], additive [B, L, L] and per head
 * [B·H, L, L].
 */
export const VERIFY_LAYOUTS = [
  { create: { rotary: { dim: 4 } }, cache: { maxLength: 40 }, mask: 'bool' },
  { create: { rotary: { dim: 4, interleaved: true } }, cache: { maxLength: 40, dtype: 'float16' }, mask: 'additive-batch' },
  { create: { rotary: { dim: 2 } }, cache: { maxLength: 40, dtype: 'int8' }, mask: 'bool-head' },
  // A window counts in positions (docs/attention-math/decoding.md §9): a draft's are its positionIds, so a
  // draft whose row is past its depth still sees the old keys at its window's edge (prefix 90 at
  // window 8: the draft in row 94 at depth 92 sees keys 85 and 86); the mask still takes part.
  { create: { rotary: { dim: 4 } }, cache: { window: 8 }, mask: 'additive', prefix: 90, tree: 'chain' },
  { create: { rotary: { dim: 4 } }, cache: { window: 8 }, mask: 'additive', prefix: 90, tree: 'tree' },
  // A window shorter than the tree is deep: the call's own keys leave a draft's window by their
  // depths too (window 3, 'deep': the draft in row 5 at depth 4 sees its ancestors in rows 3 and 4
  // but not the one in row 2, at depth 1, though that row is within 3 of its own), and a draft at
  // depth 1 in row 2 sees cached key 89. The four drafts of 'small' take the decode kernels on
  // WebGPU (at most 4 rows), six the flash ones.
  { create: { rotary: { dim: 4 } }, cache: { window: 3 }, mask: 'bool-head', prefix: 90, tree: 'deep' },
  { create: { rotary: { dim: 4 } }, cache: { window: 3, dtype: 'float16' }, mask: 'bool', prefix: 90, tree: 'small' },
  // NaN tokens (`poison`: [batch, token], its query, key and value) where the window in positions
  // decides who sees them, so that the NaN rule (a row that sees a NaN is NaN) tells the windows
  // apart: cached position 89 is in the window of the draft in row 2 (depth 1), not of its slot
  // (92); the draft in row 2 (position 91) is in the windows of its descendants in rows 3 and 4,
  // not in row 5's (depth 4, position 94), though row 2's slot (92) would be.
  { create: { rotary: { dim: 4 } }, cache: { window: 3 }, mask: 'bool', prefix: 90, tree: 'deep', poison: [[0, 89], [1, 92]] },
];

/**
 * Trees of drafted tokens (6, 'small' 4): parent of each (−1: the root, after the prefix), and
 * their branches; the first branch's first 4 (at most) are kept.
 */
export const TREES = {
  tree: { parents: [-1, 0, 0, 1, 2, 3], branches: [[0, 1, 3, 5], [0, 2, 4]] },
  chain: { parents: [-1, 0, 1, 2, 3, 4], branches: [[0, 1, 2, 3, 4, 5]] },
  deep: { parents: [-1, 0, 0, 2, 3, 4], branches: [[0, 2, 3, 4, 5], [0, 1]] },
  small: { parents: [-1, 0, 0, 1], branches: [[0, 1, 3], [0, 2]] },
};

/** The drafts treeRun() keeps: the first branch's first 4 (at most). */
export const keptDrafts = (tree) => tree.branches[0].slice(0, 4);

const depth = (tree, i) => (tree.parents[i] < 0 ? 0 : 1 + depth(tree, tree.parents[i]));
const sees = (tree, i, j) => i === j || (tree.parents[i] >= 0 && sees(tree, tree.parents[i], j));

/** The tree's verification mask in `form`: masked (true, −∞) where key j is not on query i's branch. */
export function treeMask(tree, form, heads) {
  const L = tree.parents.length;
  const copies = form.endsWith('-batch') ? B : form.endsWith('-head') ? B * heads : 1;
  const additive = form.startsWith('additive');
  const data = additive ? new Float32Array(copies * L * L) : new Uint8Array(copies * L * L);
  for (let c = 0; c < copies; c++) {
    for (let i = 0; i < L; i++) {
      for (let j = 0; j < L; j++) {
        const masked = !sees(tree, i, j);
        // An additive mask's allowed entries add a 0, which changes no score.
        data[(c * L + i) * L + j] = additive ? (masked ? -Infinity : 0) : Number(masked);
      }
    }
  }
  return { data, shape: copies === 1 ? [L, L] : [copies, L, L] };
}

/** Rows `picks` of x [B, T, E] (indices into T), in that order: [B, picks.length, E]. */
function picked(x, picks) {
  const T = x.shape[1];
  const out = new Float32Array(B * picks.length * E);
  for (let b = 0; b < B; b++) {
    picks.forEach((t, n) => out.set(x.data.subarray((b * T + t) * E, (b * T + t + 1) * E), (b * picks.length + n) * E));
  }
  return { data: out, shape: [B, picks.length, E] };
}

/** The output of a fresh cache fed `seq` [B, T, E], for its last n rows, and the cache. */
async function freshRun(mha, options, seq, n) {
  const cache = mha.createCache({ batchSize: B, ...options });
  const T = seq.shape[1];
  await Promise.all(feed(mha, cache, rows(seq, 0, T - n), T - n));
  const tail = rows(seq, T - n, n);
  return { output: (await mha.forward(tail, tail, tail, { cache })).output, cache };
}

/**
 * The prefix, then the tree verified in one call, then keep(the first branch) and one more token.
 * Resolves to { branches: [{ verified, fresh, reference }] (each branch's rows of the verify call,
 * a separate causal run's, float64's), weights (the verify call's, averaged over heads), next:
 * { kept, fresh, reference } (the token after keep()), read: [kept's, fresh's], lengths: [before,
 * after verify, after keep] }.
 */
export function treeRun(api, { create, cache: options, mask, prefix = PREFIX, tree: shape = 'tree', poison = [] }, on = {}) {
  const tree = TREES[shape];
  return withModule(api, { ...create, ...on }, async (mha, sd) => {
    const L = tree.parents.length;
    const x = { data: filled(B * (prefix + L + 1) * E, 71), shape: [B, prefix + L + 1, E] };
    for (const [b, t] of poison) x.data[(b * (prefix + L + 1) + t) * E] = NaN;
    const cache = mha.createCache({ batchSize: B, ...options });
    const prefill = feed(mha, cache, x, prefix);
    const lengths = [prefix];
    const drafts = rows(x, prefix, L);
    const positionIds = { data: Int32Array.from({ length: B * L }, (_, n) => prefix + depth(tree, n % L)), shape: [B, L] };
    const verify = mha.forward(drafts, drafts, drafts, { cache, attnMask: treeMask(tree, mask, mha.config.numHeads), positionIds, needWeights: true });
    lengths.push(cache.length);
    const accepted = keptDrafts(tree);
    cache.keep(accepted);
    lengths.push(cache.length);
    const last = rows(x, prefix + L, 1);
    const next = mha.forward(last, last, last, { cache });
    await Promise.all(prefill);
    const verified = (await verify).output;
    const prefixRows = Array.from({ length: prefix }, (_, t) => t);
    const branches = [];
    for (const branch of tree.branches) {
      const seq = picked(x, [...prefixRows, ...branch.map((i) => prefix + i)]);
      branches.push({ verified: picked(verified, branch), fresh: (await freshRun(mha, options, seq, branch.length)).output,
        reference: reference(mha, sd, seq, branch.length, options) });
    }
    const seq = picked(x, [...prefixRows, ...accepted.map((i) => prefix + i), prefix + L]);
    const fresh = await freshRun(mha, options, seq, 1);
    return { branches, lengths, weights: (await verify).attnWeights,
      next: { kept: (await next).output, fresh: fresh.output, reference: reference(mha, sd, seq, 1, options) },
      read: [await cache.read(), await fresh.cache.read()] };
  });
}

/**
 * Draft `n` tokens (4) at their default positions, keep(`accept`), then one more token: { kept,
 * fresh, reference } outputs of that token, read: [kept's, fresh's], length after keep(). With
 * `fork`, keep() and the token go to a fork made after the drafts; `on`: create() options of
 * where it runs ({ backend: 'webgpu', gpu }).
 */
export function draftRun(api, { create, cache: options, prefix = PREFIX }, accept, { n = 4, fork = false, on = {} } = {}) {
  return withModule(api, { ...create, ...on }, async (mha, sd) => {
    const x = { data: filled(B * (prefix + n + 1) * E, 72), shape: [B, prefix + n + 1, E] };
    const source = mha.createCache({ batchSize: B, ...options });
    const prefill = feed(mha, source, x, prefix);
    const drafts = rows(x, prefix, n);
    const verify = mha.forward(drafts, drafts, drafts, { cache: source });
    const cache = fork ? source.fork() : source;
    cache.keep(accept);
    const length = cache.length;
    const last = rows(x, prefix + n, 1);
    const next = mha.forward(last, last, last, { cache });
    await Promise.all([...prefill, verify]);
    const seq = picked(x, [...Array.from({ length: prefix }, (_, t) => t), ...accept.map((i) => prefix + i), prefix + n]);
    const fresh = await freshRun(mha, options, seq, 1);
    return { kept: (await next).output, fresh: fresh.output, reference: reference(mha, sd, seq, 1, options), length,
      read: [await cache.read(), await fresh.cache.read()] };
  });
}

/**
 * A verification mask over a call longer than a window ring's pass (prefix 90 at window 8: ring
 * 72, passes of 65 rows; a call of 80): an additive [B, L, L] mask of finite values, some −∞, on
 * top of the window's causal rule. Resolves to { output (the call's), reference (float64: the
 * whole sequence with the window's mask plus this one at the new positions) }.
 */
export function longMaskRun(api, on = {}) {
  const [P, L, W] = [90, 80, 8];
  return withModule(api, { rotary: { dim: 4 }, ...on }, async (mha, sd) => {
    const T = P + L;
    const x = { data: filled(B * T * E, 75), shape: [B, T, E] };
    const values = filled(B * L * L, 76, 0.5);
    const data = values.map((m, k) => (k % 7 === 3 ? -Infinity : m));
    const cache = mha.createCache({ batchSize: B, window: W });
    await Promise.all(feed(mha, cache, x, P));
    const drafts = rows(x, P, L);
    const { output } = await mha.forward(drafts, drafts, drafts, { cache, attnMask: { data, shape: [B, L, L] } });
    const full = new Float32Array(B * mha.config.numHeads * T * T);
    for (let bh = 0; bh < B * mha.config.numHeads; bh++) {
      const b = Math.floor(bh / mha.config.numHeads);
      for (let i = 0; i < T; i++) {
        for (let j = 0; j < T; j++) {
          const inWindow = j <= i && j > i - W;
          const extra = i >= P && j >= P ? data[(b * L + i - P) * L + j - P] : 0;
          full[(bh * T + i) * T + j] = inWindow ? extra : -Infinity;
        }
      }
    }
    const ref = mhaReference(mha.config, sd, x, x, x, { attnMask: { data: full, shape: [B * mha.config.numHeads, T, T] } });
    return { output, reference: rows({ data: Float32Array.from(ref.output), shape: [B, T, E] }, P, L) };
  });
}

/** compare() of two { data, shape }: null when within tolerance, else the detail line. */
export function outsideTolerance(actual, expected) {
  const r = compare(actual, expected);
  return r.ok ? null : r.detail;
}

/** Whether two read() results hold the same bits. */
export const sameRead = (a, b) => sameBits(a.key.data, b.key.data) && sameBits(a.value.data, b.value.data)
  && a.firstPosition === b.firstPosition;

/** keep() arguments a cache whose last call appended 4 positions refuses (CacheError naming `indices`). */
export const HOSTILE_KEEPS = [[1, 1], [2, 1], [4], [-1], [0, 1.5], ['0'], 'x', null, undefined, 3, [0, 1, 2, 3, 4]];

/**
 * Misuse: { refusals: [{ indices, error }] (HOSTILE_KEEPS after a 4-row call), masks: [errors of
 * forward() calls with bad verification masks], length (after them), unchanged (the next call
 * equals a twin's that saw none, bit for bit), noCall: [keep() errors on a new cache, after
 * truncate(), after keep(), after reset()], encoded (keep() on an encoded cache), disposed }.
 */
export function hostileKeepRun(api, on = {}) {
  const rejected = async (p) => {
    try {
      await p;
      return null;
    } catch (e) {
      return e;
    }
  };
  return withModule(api, { rotary: { dim: 4 }, ...on }, async (mha) => {
    const x = { data: filled(B * 12 * E, 73), shape: [B, 12, E] };
    const [cache, twin] = [0, 1].map(() => mha.createCache({ batchSize: B, maxLength: 16 }));
    // Two calls of 4 rows each: keep() chooses among the second's.
    const second = rows(x, 4, 4);
    await Promise.all([cache, twin].flatMap((c) => [...feed(mha, c, x, 4), mha.forward(second, second, second, { cache: c })]));
    const refusals = HOSTILE_KEEPS.map((indices) => ({ indices, error: caught(() => cache.keep(indices)) }));
    const step = rows(x, 8, 2);
    const masks = [];
    for (const attnMask of [{ data: new Uint8Array(6), shape: [2, 3] }, { data: new Uint8Array(2 * 2 * 3), shape: [2, 2, 3] },
      { data: new Int32Array(4), shape: [2, 2] }, { data: new Uint8Array(3 * 2 * 2), shape: [3, 2, 2] }]) {
      masks.push(await rejected(mha.forward(step, step, step, { cache, attnMask })));
    }
    const length = cache.length;
    const [a, b] = await Promise.all([cache, twin].map((c) => mha.forward(step, step, step, { cache: c })));
    const unchanged = sameBits(a.output.data, b.output.data);
    const other = mha.createCache({ batchSize: B, maxLength: 16 });
    const noCall = [caught(() => other.keep([]))];
    await Promise.all(feed(mha, other, x, 4));
    other.truncate(2);
    noCall.push(caught(() => other.keep([0])));
    await Promise.all(feed(mha, other, x, 2));
    other.keep([1]);
    noCall.push(caught(() => other.keep([0])));
    await Promise.all(feed(mha, other, x, 2));
    other.reset();
    noCall.push(caught(() => other.keep([0])));
    cache.dispose();
    return { refusals, masks, length, unchanged, noCall, disposed: caught(() => cache.keep([0])) };
  });
}

/**
 * A tree of drafts at its depths under a window on a batched cache whose rows differ in length
 * (90 and 87: the batch at positions of its own, a window's ring wrapped), against one batch-1
 * cache per row fed the same tokens and the same call. Resolves to { batched: [B, L, E], alone:
 * [per row, [1, L, E]] } outputs of the verify call.
 */
export function rowsTreeRun(api, on = {}) {
  const tree = TREES.tree;
  const L = tree.parents.length;
  const firsts = [90, 87];
  return withModule(api, { rotary: { dim: 4 }, ...on }, async (mha) => {
    const x = { data: filled(B * (90 + L) * E, 78), shape: [B, 90 + L, E] };
    const verify = (cache, drafts, ns) => mha.forward(drafts, drafts, drafts, { cache, attnMask: treeMask(tree, 'bool'),
      positionIds: { data: Int32Array.from({ length: ns.length * L }, (_, n) => ns[Math.floor(n / L)] + depth(tree, n % L)), shape: [ns.length, L] } });
    const cache = mha.createCache({ batchSize: B, window: 8 });
    await Promise.all(feed(mha, cache, x, 90));
    cache.truncate(firsts);
    const batched = (await verify(cache, rows(x, 90, L), firsts)).output;
    const alone = [];
    for (let b = 0; b < B; b++) {
      const mine = { data: x.data.subarray(b * (90 + L) * E, (b + 1) * (90 + L) * E), shape: [1, 90 + L, E] };
      const single = mha.createCache({ window: 8 });
      await Promise.all(feedFrom(mha, single, mine, 0, firsts[b]));
      alone.push((await verify(single, rows(mine, 90, L), [firsts[b]])).output);
    }
    return { batched, alone };
  });
}

/**
 * A wide tree under a window: a root and 64 children (all at depth 1), 65 drafts (one pass of
 * window 8's ring) after prefix 90, each child seeing the root, itself and cached keys 84 … 89 by
 * its depth's window. Children past row 63 fall in a second tile of query rows (WebGPU's flash
 * kernels take 64 or fewer a workgroup), whose key loop a window counted in rows would start past
 * those keys. Resolves to { output: [B, 65, E] of the verify call, reference: float64's rows, each
 * row the last of its own branch's causal run (the root's: its own) }.
 */
export function wideTreeRun(api, on = {}) {
  const [P, L, W] = [90, 65, 8];
  return withModule(api, { rotary: { dim: 4 }, ...on }, async (mha, sd) => {
    const x = { data: filled(B * (P + L) * E, 79), shape: [B, P + L, E] };
    const cache = mha.createCache({ batchSize: B, window: W });
    await Promise.all(feed(mha, cache, x, P));
    const drafts = rows(x, P, L);
    const attnMask = { data: Uint8Array.from({ length: L * L }, (_, k) => Number(k % L !== 0 && k % L !== Math.floor(k / L))), shape: [L, L] };
    const positionIds = { data: Int32Array.from({ length: B * L }, (_, n) => P + Math.min(1, n % L)), shape: [B, L] };
    const { output } = await mha.forward(drafts, drafts, drafts, { cache, attnMask, positionIds });
    const prefix = Array.from({ length: P }, (_, t) => t);
    const expected = new Float32Array(B * L * E);
    for (let i = 0; i < L; i++) {
      const row = reference(mha, sd, picked(x, [...prefix, ...(i ? [P, P + i] : [P])]), 1, { window: W });
      for (let b = 0; b < B; b++) expected.set(row.data.subarray(b * E, (b + 1) * E), (b * L + i) * E);
    }
    return { output, reference: { data: expected, shape: [B, L, E] } };
  });
}

/**
 * positionIds that move a window (docs/attention-math/decoding.md §9) where its ring cannot hold the keys
 * they reach: ids below the cache's length, and a call longer than one pass of the ring (window 8:
 * 65 rows) at ids off its rows. Resolves to { errors: [each call's error or null], length (after
 * them), unchanged (the next call equals a twin's that saw none, bit for bit) }.
 */
export function windowIdsRefusalRun(api, on = {}) {
  return withModule(api, { rotary: { dim: 4 }, ...on }, async (mha) => {
    const x = { data: filled(B * 80 * E, 77), shape: [B, 80, E] };
    const [cache, twin] = [0, 1].map(() => mha.createCache({ batchSize: B, window: 8 }));
    await Promise.all([cache, twin].flatMap((c) => feed(mha, c, x, 10)));
    const ids = (L, at) => ({ data: Int32Array.from({ length: B * L }, (_, n) => at(n % L)), shape: [B, L] });
    const calls = [[2, (i) => 9 + i], [66, (i) => 11 + i]];
    const errors = [];
    for (const [L, at] of calls) {
      const step = rows(x, 10, L);
      try {
        await mha.forward(step, step, step, { cache, positionIds: ids(L, at) });
        errors.push(null);
      } catch (e) {
        errors.push(e);
      }
    }
    const length = cache.length;
    const step = rows(x, 10, 3);
    const [a, b] = await Promise.all([cache, twin].map((c) => mha.forward(step, step, step, { cache: c, positionIds: ids(3, (i) => 10 + i) })));
    return { errors, length, unchanged: sameBits(a.output.data, b.output.data) };
  });
}

/** keep() on an encoded cache (a module without RoPE: encode() refuses RoPE): its error. */
export function encodedKeepRun(api, on = {}) {
  return withModule(api, on, async (mha) => {
    const x = { data: filled(B * 6 * E, 74), shape: [B, 6, E] };
    const encoded = await mha.encode(x, x);
    try {
      encoded.keep([0]);
      return null;
    } catch (e) {
      return e;
    } finally {
      encoded.dispose();
    }
  });
}
