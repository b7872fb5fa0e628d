// A batched cache's rows of different lengths (issue 38) through the public API: forward() with
// `rows` (the rows still decoding), then calls on every row from their own lengths, and
// truncate(lengths), against one batch-1 cache per row fed the same tokens (bit for bit, same
// backend) and against the float64 reference of each row's tokens. tests/js/cache_rows.test.js
// runs them on WASM.
import { filled } from './random.mjs';
import { mhaReference } from './reference.mjs';
import { outsideTolerance, withModule } from './cache_rollback.mjs';
import { sameBits } from './compare.mjs';

const E = 16;
const B = 4;
/** RoPE and a softcap, each applied per row (and GQA: ROWS_GQA_CREATE). */
export const ROWS_CREATE = { embedDim: E, numHeads: 4, rotary: { dim: 4 }, softcap: 30 };
export const ROWS_GQA_CREATE = { ...ROWS_CREATE, numKvHeads: 2 };

/**
 * Caches of 4 rows, each with its schedule: calls of [rows (null: every row), tokens], with a
 * truncate(lengths) between them (a window's row 3 has wrapped its ring of 72 slots by then).
 */
export const ROWS_LAYOUTS = [
  { cache: { maxLength: 64 }, long: 30 },
  { cache: { maxLength: 64, dtype: 'float16' }, long: 30 },
  { cache: { maxLength: 64, dtype: 'int8' }, long: 30 },
  { cache: { window: 8 }, long: 70 },
];
const schedule = (long) => [
  [null, 3], [[1, 2, 3], 6], [[2, 3], 11], [[3], long], [[0, 2], 1], [null, 2], [[0, 1, 3], 1],
  { truncate: [2, 9, 20, 40] }, [null, 2], [[1, 3], 3], [[2], 1],
];

// Row b's tokens, as many as any schedule feeds it: seeded per row.
const tokensOf = (b, n) => filled(n * E, 700 + b);

/**
 * Runs a layout's schedule on a batched cache and on one cache per row. Resolves to { steps:
 * [{ rows, batched: Float32Array [rows.length, n, E], alone: [Float32Array [1, n, E] per listed
 * row] }], lengths (cache.lengths after each step), lengthError (what cache.length threw once the
 * rows differed), outputs: [per row, its outputs of the tokens it still holds, Float32Array
 * [n_b, E]], reference: [per row, the float64 outputs of those tokens] }.
 */
export function rowsRun(api, { cache: options, long }, create = ROWS_CREATE) {
  return withModule(api, create, async (mha, sd) => {
    const batched = mha.createCache({ batchSize: B, ...options });
    const alone = Array.from({ length: B }, () => mha.createCache({ batchSize: 1, ...options }));
    const held = Array.from({ length: B }, () => 0);  // each row's tokens so far
    const outputs = Array.from({ length: B }, () => []);  // each row's output rows, one Float32Array [E] each
    const all = Array.from({ length: B }, (_, b) => tokensOf(b, 128));
    const steps = [];
    const lengths = [];
    let lengthError = null;
    for (const step of schedule(long)) {
      if (step.truncate) {
        batched.truncate(step.truncate);
        step.truncate.forEach((n, b) => {
          alone[b].truncate(n);
          held[b] = n;
          outputs[b].length = n;
        });
        lengths.push(batched.lengths);
        continue;
      }
      const [rows, n] = step;
      const listed = rows ?? [0, 1, 2, 3];
      const x = new Float32Array(listed.length * n * E);
      listed.forEach((b, i) => x.set(all[b].subarray(held[b] * E, (held[b] + n) * E), i * n * E));
      const input = { data: x, shape: [listed.length, n, E] };
      const { output } = await mha.forward(input, input, input, rows ? { cache: batched, rows } : { cache: batched });
      const one = [];
      for (const [i, b] of listed.entries()) {
        const xi = { data: x.subarray(i * n * E, (i + 1) * n * E), shape: [1, n, E] };
        one.push((await mha.forward(xi, xi, xi, { cache: alone[b] })).output.data);
        for (let t = 0; t < n; t++) outputs[b].push(output.data.slice((i * n + t) * E, (i * n + t + 1) * E));
        held[b] += n;
      }
      steps.push({ rows: listed, batched: output.data, alone: one });
      lengths.push(batched.lengths);
      if (!lengthError) {
        try {
          void batched.length;
        } catch (e) {
          lengthError = e;
        }
      }
    }
    const reference = held.map((n, b) => rowReference(mha, sd, all[b], n, options));
    const joined = outputs.map((rowsOut) => {
      const out = new Float32Array(rowsOut.length * E);
      rowsOut.forEach((r, t) => out.set(r, t * E));
      return out;
    });
    return { steps, lengths, lengthError, outputs: joined, reference };
  });
}

// The float64 outputs of a batch-1 cache holding a row's first n tokens (causal, with the cache's
// window as a mask, its storage type's rounding).
function rowReference(mha, sd, tokens, n, { window = 0, dtype = 'float32' }) {
  const x = { data: tokens.subarray(0, n * E), shape: [1, n, E] };
  const mask = window
    ? { data: Float32Array.from({ length: n * n }, (_, k) => (k % n > Math.floor(k / n) - window ? 0 : -Infinity)), shape: [n, n] }
    : undefined;
  return Float32Array.from(mhaReference(mha.config, sd, x, x, x, { isCausal: true, attnMask: mask }, dtype).output);
}

/**
 * Misuse of rows and lengths on a cache of 4 rows at lengths [4, 6, 4, 4]: each refused call and
 * what it threw, then whether the next call still equals a twin cache's. backend: create()'s
 * backend options ({ backend: 'webgpu', gpu } on the GPU).
 */
export function hostileRowsRun(api, backend = {}) {
  return withModule(api, { embedDim: E, numHeads: 4, ...backend }, async (mha) => {
    const make = () => mha.createCache({ batchSize: B, maxLength: 16 });
    const [cache, twin] = [make(), make()];
    const token = (n, L = 1) => ({ data: filled(n * L * E, 41 + n), shape: [n, L, E] });
    for (const c of [cache, twin]) {
      const prompt = token(4, 4);
      await mha.forward(prompt, prompt, prompt, { cache: c });
      await mha.forward(token(1), token(1), token(1), { cache: c, rows: [1] });
      await mha.forward(token(1), token(1), token(1), { cache: c, rows: [1] });
    }
    const refusals = [];
    const attempt = (what, f) => {
      try {
        f();
        refusals.push({ what, error: null });
      } catch (e) {
        refusals.push({ what, error: e });
      }
    };
    const call = async (what, n, options, L = 1) => {
      try {
        const x = token(n, L);
        await mha.forward(x, x, x, { cache, ...options });
        refusals.push({ what, error: null });
      } catch (e) {
        refusals.push({ what, error: e });
      }
    };
    await call('rows out of range', 2, { rows: [0, 4] });
    await call('a negative row', 1, { rows: [-1] });
    await call('a repeated row', 2, { rows: [1, 1] });
    await call('unsorted rows', 2, { rows: [2, 0] });
    await call('a fractional row', 1, { rows: [0.5] });
    await call('rows not a list', 1, { rows: 1 });
    await call('batch 3 with 2 rows', 3, { rows: [0, 1] });
    await call('batch 1 with 2 rows', 1, { rows: [0, 1] });
    await call('rows past maxLength', 1, { rows: [1] }, 11);
    attempt('truncate(lengths) of 3 rows', () => cache.truncate([1, 1, 1]));
    attempt('truncate(lengths) above a row', () => cache.truncate([4, 7, 4, 4]));
    attempt('truncate(lengths) below 0', () => cache.truncate([4, 6, -1, 4]));
    attempt('truncate(lengths) not integers', () => cache.truncate([4, 6, '4', 4]));
    attempt('truncate(length) above the shorter rows', () => cache.truncate(5));
    attempt('cache.length', () => cache.length);
    attempt('keep() after a rows call', () => cache.keep([0]));
    let readError = null;
    await cache.read().catch((e) => { readError = e; });
    const lengths = cache.lengths;
    const next = token(4);
    const [a, b] = await Promise.all([cache, twin].map((c) => mha.forward(next, next, next, { cache: c })));
    return { refusals, readError, lengths, unchanged: a.output.data.every((v, i) => Object.is(v, b.output.data[i])) };
  });
}

/**
 * rowsRun()'s result checked with `assert` (node:assert's): each step bit for bit against one
 * cache per row, cache.lengths after each step, cache.length a CacheError naming lengths once the
 * rows differ, and each row within tolerance of its float64 reference.
 */
export function checkRowsRun(assert, api, r, { long }) {
  for (const [s, step] of r.steps.entries()) {
    step.rows.forEach((b, i) => {
      const n = step.alone[i].length;
      assert.ok(sameBits(step.batched.subarray(i * n, (i + 1) * n), step.alone[i]), `step ${s}, row ${b}`);
    });
  }
  assert.deepEqual(r.lengths.slice(0, 7), [[3, 3, 3, 3], [3, 9, 9, 9], [3, 9, 20, 20], [3, 9, 20, 20 + long],
    [4, 9, 21, 20 + long], [6, 11, 23, 22 + long], [7, 12, 23, 23 + long]]);
  assert.deepEqual(r.lengths.slice(7), [[2, 9, 20, 40], [4, 11, 22, 42], [4, 14, 22, 45], [4, 14, 23, 45]]);
  assert.ok(r.lengthError instanceof api.CacheError, String(r.lengthError));
  assert.equal(r.lengthError.argument, 'lengths');
  r.outputs.forEach((out, b) => {
    const shape = [out.length / E, E];
    assert.equal(outsideTolerance({ data: out, shape }, { data: r.reference[b], shape }), null, `row ${b}`);
  });
}

/** hostileRowsRun()'s result checked with `assert`: each refusal's class and argument, nothing changed. */
export function checkHostileRows(assert, api, r) {
  const { CacheError, ShapeError } = api;
  const expected = {
    'rows out of range': [ShapeError, 'rows'], 'a negative row': [ShapeError, 'rows'],
    'a repeated row': [ShapeError, 'rows'], 'unsorted rows': [ShapeError, 'rows'],
    'a fractional row': [ShapeError, 'rows'], 'rows not a list': [ShapeError, 'rows'],
    'batch 3 with 2 rows': [ShapeError, 'rows'], 'batch 1 with 2 rows': [ShapeError, 'rows'],
    'rows past maxLength': [CacheError, 'cache'],
    'truncate(lengths) of 3 rows': [CacheError, 'lengths'], 'truncate(lengths) above a row': [CacheError, 'lengths'],
    'truncate(lengths) below 0': [CacheError, 'lengths'], 'truncate(lengths) not integers': [CacheError, 'lengths'],
    'truncate(length) above the shorter rows': [CacheError, 'length'],
    'cache.length': [CacheError, 'lengths'], 'keep() after a rows call': [CacheError, 'indices'],
  };
  assert.deepEqual(r.refusals.map((x) => x.what), Object.keys(expected));
  for (const { what, error } of r.refusals) {
    const [type, argument] = expected[what];
    assert.ok(error instanceof type, `${what}: ${error}`);
    assert.equal(error.argument, argument, what);
  }
  assert.ok(r.readError instanceof CacheError && r.readError.argument === 'lengths', String(r.readError));
  assert.deepEqual(r.lengths, [4, 6, 4, 4]);
  assert.ok(r.unchanged, 'the next call after the refusals equals a twin cache\'s');
}
