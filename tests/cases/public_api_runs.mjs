// The kernel-level cases (test mode) through the public API, for backends whose kernels are not
// separately callable (WebGPU): each case becomes a MultiHeadAttention whose Q/K/V projections
// are identities (so its attention sees the case's inputs as given) and whose output projection
// is random, run with forward() or, where a case needs a KV cache (a query offset, a window,
// decode rows, appends), chunk by chunk on a cache; each checked chunk is compared with the
// float64 reference (reference.mjs) followed by the same output projection. A linear case is the
// V projection of a module with one key per query (batch = rows, L = S = 1), so that attention
// passes V through and the identity output projection returns x Wᵀ + b. A case's type set picks
// the module's weightsDtype, its activations and the cache's dtype (io is float32); the reference
// then uses the stored weights and cached keys and values (tests/contract/storage.mjs; the
// identities are stored exactly in every type) and, with int8 activations, every projection's
// input as its int8 blocks give it (the identities then pass those values on).
import { filled } from '../contract/random.mjs';
import { int8ActivationCodes, int8ActivationSlack, projectionInput, stored } from '../contract/storage.mjs';
import { attention, attnMask, keyPaddingMask, linear, poisonKeys, rotary } from './reference.mjs';

/** The list's type names as the API's dtypes. */
const DTYPES = { f32: 'float32', f16: 'float16', bf16: 'bfloat16', i8: 'int8', q4: 'int4' };

/** A case's { weights, kv, activations } as the API's dtypes (float32 where the case has no type set). */
const storageOf = (c) => ({
  weights: DTYPES[c.types?.weights ?? 'f32'], kv: DTYPES[c.types?.kv ?? 'f32'], activations: DTYPES[c.types?.act ?? 'f32'],
});
/** create()'s storage options for a case. */
const storageOptions = ({ weights, activations }) => ({ weightsDtype: weights, ...(activations === 'float32' ? {} : { activations }) });

/**
 * int8 activations: the extra tolerance of y = (the computed `input` [rows, width], quantised) · Wᵀ
 * where an input value sits by a rounding boundary (storage.mjs's int8ActivationSlack through |W|).
 */
const slackThrough = (input, rows, width, W, outDim) =>
  linear(int8ActivationSlack(input, width), rows, width, W.map(Math.abs), outDim);

/**
 * An identity projection's output with int8 activations, bit for bit as the core computes it
 * (docs/attention-math/storage.md §11): the one nonzero weight of each output's row, a block of code q_w
 * and scale s_w (int8: 127 and fl(1/127); int4: −8 about its zero point and −1/8), times the
 * input's code and block scale, fl(fl(s_w · d) · q_w·q). Exact, so that a cache rounding or
 * quantising the projected keys and values sees the core's very numbers.
 */
function identityProjected(x, width, weights) {
  const [qw, sw] = weights === 'int4' ? [-8, -0.125] : [127, Math.fround(1 / 127)];
  const { codes, scales } = int8ActivationCodes(x, width);
  return Float32Array.from(codes, (q, i) => Math.fround(Math.fround(sw * scales[i]) * (qw * q)));
}

const identity = (rows, cols) => {
  const w = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) w[r * cols + (r % cols)] = 1;
  return w;
};

/** The state dict: identities for the Q/K/V weights (or their stack), `out` for out_proj. */
function stateDict(specs, { v, out, vBias }) {
  const sd = {};
  for (const { name, shape } of specs) {
    const [rows, cols] = shape;
    if (name === 'out_proj.weight') sd[name] = { data: out, shape };
    else if (name === 'v_proj_weight' && v) sd[name] = { data: v, shape };
    else if (name === 'in_proj_bias') {
      sd[name] = { data: new Float32Array(rows), shape };
      if (vBias) sd[name].data.set(vBias, rows - vBias.length);
    } else if (name.endsWith('bias')) sd[name] = { data: new Float32Array(rows), shape };
    else if (name === 'in_proj_weight') {
      const third = rows / 3;
      const data = new Float32Array(rows * cols);
      for (let p = 0; p < 3; p++) data.set(identity(third, cols), p * third * cols);
      sd[name] = { data, shape };
    } else sd[name] = { data: identity(rows, cols), shape };
  }
  return sd;
}

/**
 * A case as a run: { create, sd, B, Tq, T, q [B, Tq, E], k and v [B, T, width] (Float32Array),
 * chunks (null: one forward without a cache), cache, options(at, n) → forward options, expected(at, n) → the
 * reference output of rows [at, at + n) as Float64Array, checked(at) }.
 */
export function publicApiRun(c) {
  switch (c.op) {
    case 'linear': return linearRun(c);
    case 'rotary': return attentionRun({ batch: 1, heads: c.heads, kvHeads: c.heads, L: c.rows, S: c.position0 + c.rows,
      dk: c.headDim, dv: c.headDim, causal: true, queryOffset: c.position0, window: 0, keyPadding: 'none', attnMask: 'none',
      maskedRows: [], amplitude: 1 }, { dim: c.rotaryDim, interleaved: c.interleaved, base: c.base }, false, null,
      c.positions.length ? c.positions : null);
    case 'decode': return attentionRun({ ...c, L: 1, S: c.length, causal: true, queryOffset: c.length - 1,
      keyPadding: 'none', attnMask: 'none', maskedRows: [], amplitude: 1 }, null, true);
    case 'cacheAppend': return attentionRun({ ...c, L: 0, S: c.chunks.reduce((a, b) => a + b, 0), causal: true, queryOffset: 0,
      keyPadding: 'none', attnMask: 'none', maskedRows: [], amplitude: 1 }, null, true, c.chunks);
    default: return attentionRun(c);
  }
}

function linearRun(c) {
  const w = filled(c.out * c.in, 3, 1 / Math.sqrt(c.in));
  const storage = storageOf(c);
  const { weights, activations } = storage;
  const bias = c.bias ? filled(c.out, 4) : null;
  const x = filled(c.rows * c.in, 5, c.amplitude);
  const act = (rows, width) => projectionInput(rows, width, activations);
  const projected = () => linear(act(x, c.in), c.rows, c.in, stored(w, weights, c.in), c.out, bias);
  return {
    create: { embedDim: c.out, numHeads: 1, kdim: 1, vdim: c.in, headDim: 1, valueHeadDim: c.out, bias: c.bias, ...storageOptions(storage) },
    sd: (specs) => stateDict(specs, { v: w, out: identity(c.out, c.out), vBias: bias }),
    B: c.rows, Tq: 1, T: 1, q: filled(c.rows * c.out, 6), k: filled(c.rows, 7), v: x, chunks: null, cache: null,
    options: () => ({}),
    // The output projection (an identity) takes its input through the activations too.
    expected: () => linear(act(projected(), c.out), c.rows, c.out, stored(identity(c.out, c.out), weights, c.out), c.out),
    slack: activations === 'int8' ? () => slackThrough(projected(), c.rows, c.out, stored(identity(c.out, c.out), weights, c.out), c.out) : null,
    checked: () => true,
  };
}

/**
 * A flash-like case (batch, heads, kvHeads, L, S, dk, dv, causal, queryOffset, window, masks):
 * one forward of L query rows over S keys, or with `cached` (or a query offset or window)
 * chunks [queryOffset, L] (or `chunks`) of S positions on a cache, of which the rows from
 * queryOffset on are checked. `positions` (rotary only): the rotary position of every row from 0,
 * given to forward() as positionIds.
 */
function attentionRun(c, rope = null, cached = false, chunks = null, positions = null) {
  const { batch: B, heads: H, kvHeads: G, S: T, dk, dv } = c;
  const E = H * dk;
  const useCache = cached || c.queryOffset > 0 || c.window > 0;
  const Tq = useCache ? T : c.L;  // query rows: one per position with a cache
  const out = filled(E * H * dv, 8, 1 / Math.sqrt(H * dv));
  const storage = storageOf(c);
  const { weights, kv, activations } = storage;
  // The identity Q/K/V projections' outputs (exact in float32 with float32 activations).
  const act = (x, width) => (activations === 'int8' ? identityProjected(x, width, weights) : x);
  // The cache stores the keys and values the module computed in float32 (exactly the inputs here,
  // rotated where the case has rotary), rounded or quantised per (position, K/V head) row.
  const cachedAs = (x, heads, width) => (useCache ? stored(Float32Array.from(x), kv, heads * width, width) : x);
  const q = filled(B * Tq * E, 11, c.amplitude), k = filled(B * T * G * dk, 12, c.amplitude), v = filled(B * T * G * dv, 13, c.amplitude);
  // NaN / Inf keys and values at the case's keys (masked means absent: rows that may not see them stay finite).
  for (const [keys, value] of [[c.nanKeys ?? [], NaN], [c.infKeys ?? [], Infinity]]) {
    poisonKeys(k, B, T, G * dk, keys, value);
    poisonKeys(v, B, T, G * dv, keys, value);
  }
  const padding = keyPaddingMask(c.keyPadding, B, T);
  const paddingUpTo = (to) => padding && { data: rowsOf(padding.data, B, T, 1, 0, to), shape: [B, to] };
  const mask = useCache ? null : attnMask(c.attnMask, B, H, Tq, T, c.maskedRows);
  return {
    create: { embedDim: E, numHeads: H, numKvHeads: G, kdim: G * dk, vdim: G * dv, headDim: dk, valueHeadDim: dv, bias: false,
      ...(rope ? { rotary: rope } : {}), ...storageOptions(storage) },
    sd: (specs) => stateDict(specs, { out }),
    B, Tq, T, q, k, v,
    chunks: useCache ? chunks ?? [c.queryOffset, c.L].filter((n) => n > 0) : null,
    cache: useCache ? { batchSize: B, ...(c.window ? { window: c.window } : { maxLength: T }), dtype: kv } : null,
    options: (at, n) => ({
      ...(useCache
        ? { ...(padding ? { keyPaddingMask: paddingUpTo(at + n) } : {}) }
        : { isCausal: c.causal, ...(padding ? { keyPaddingMask: padding } : {}), ...(mask ? { attnMask: mask } : {}) }),
      ...(positions ? { positionIds: positionIdsOf(positions, B, at, n ?? Tq) } : {}),  // n null: every row
    }),
    // Rows [at, at + n) of the queries over keys [0, at + n) with a cache; all of them without.
    expected: (at, n) => linear(projectionInput(heads(at, n), H * dv, activations), B * n, H * dv, stored(out, weights, H * dv), E),
    slack: activations === 'int8' ? (at, n) => slackThrough(heads(at, n), B * n, H * dv, stored(out, weights, H * dv), E) : null,
    checked: (at) => !useCache || chunks !== null || at >= c.queryOffset,
  };
  // The attention output of rows [at, at + n), the output projection's input.
  function heads(at, n) {
    const S = useCache ? at + n : T;
    const turn = (x, rows, heads, width) => (rope ? rotary(x, B, rows, heads, width, rope, 0, positions) : x);
    const qs = rowsOf(turn(act(rowsOf(q, B, Tq, E, 0, at + n), E), at + n, H, dk), B, at + n, E, at, at + n);
    const ks = cachedAs(turn(act(rowsOf(k, B, T, G * dk, 0, S), G * dk), S, G, dk), G, dk);
    const vs = cachedAs(act(rowsOf(v, B, T, G * dv, 0, S), G * dv), G, dv);
    const shape = { ...c, L: n, S, queryOffset: at, causal: useCache || c.causal };
    return attention(shape, qs, ks, vs, useCache ? paddingUpTo(S) : padding, mask);
  }
}

/** forward()'s positionIds [B, n] for rows [at, at + n) of every batch: the case's positions of those rows. */
const positionIdsOf = (positions, B, at, n) =>
  ({ data: Int32Array.from({ length: B * n }, (_, i) => positions[at + (i % n)]), shape: [B, n] });

/** Rows [from, to) of x [B, T, width] as a new [B, to - from, width] array of x's kind. */
function rowsOf(x, B, T, width, from, to) {
  const part = new x.constructor(B * (to - from) * width);
  for (let b = 0; b < B; b++) part.set(x.subarray((b * T + from) * width, (b * T + to) * width), b * (to - from) * width);
  return part;
}

/**
 * Runs a case on `MultiHeadAttention` with `createOptions` (backend, gpu); calls
 * check(actual { data, shape }, expected { data: Float64Array, shape }, what) per checked chunk.
 */
export async function runOnPublicApi(MultiHeadAttention, c, createOptions, check) {
  const run = publicApiRun(c);
  const mha = await MultiHeadAttention.create({ ...run.create, ...createOptions });
  try {
    const { embedDim: E, kdim, vdim } = mha.config;
    mha.loadStateDict(run.sd(mha.stateDictShapes));
    const tensor = (x, T, width, at, n) => ({ data: rowsOf(x, run.B, T, width, at, n === null ? T : at + n), shape: [run.B, n ?? T, width] });
    const cache = run.cache ? mha.createCache(run.cache) : null;
    let at = 0;
    for (const n of run.chunks ?? [null]) {  // null: one forward of every query and key row
      const options = { ...run.options(at, n), ...(cache ? { cache } : {}) };
      const { output } = await mha.forward(tensor(run.q, run.Tq, E, at, n), tensor(run.k, run.T, kdim, at, n), tensor(run.v, run.T, vdim, at, n), options);
      const rows = n ?? run.Tq;
      const slack = run.slack ? { slack: run.slack(at, rows) } : {};
      if (run.checked(at)) check(output, { data: run.expected(at, rows), shape: [run.B, rows, E], ...slack }, `rows ${at}..${at + rows - 1}`);
      at += rows;
    }
    cache?.dispose?.();
  } finally {
    mha.dispose();
  }
}
