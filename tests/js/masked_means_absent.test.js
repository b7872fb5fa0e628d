// Masked means absent (issue 21, finding 7): a NaN or Inf at a key a row may not see (after its
// causal diagonal, under a key-padding mask) never reaches that row, in grouped-query heads, in
// one forward and in a cache's chunks alike. Found as: GQA, causal, NaN at token 13 made rows 0,
// 1 and 6–29 NaN (0 · NaN in the 4-row blocks), a keyPaddingMask on it did not help, and chunked
// and full forwards disagreed. The kernel-level cases (tests/cases) check the same rule against
// the float64 reference on every backend; this checks it as a user meets it, on whichever module
// and threads the run picks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';

const E = 32;
const T = 30;
const POISONED = 13;

async function gqaModule() {
  const next = rng(21);
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2 });
  const sd = {};
  for (const { name, shape } of mha.stateDictShapes) sd[name] = randomTensor(shape, next, 0.3);
  mha.loadStateDict(sd);
  return mha;
}

/** x [1, T, E] with token POISONED's features all `value`. */
function tokens(value) {
  const x = randomTensor([1, T, E], rng(5));
  x.data.fill(value, POISONED * E, (POISONED + 1) * E);
  return x;
}

const rowsWithNaN = (out) => [...Array(T).keys()].filter((i) => out.data.subarray(i * E, (i + 1) * E).some(Number.isNaN));
const row = (out, i) => Array.from(out.data.subarray(i * E, (i + 1) * E));

test('GQA, causal, NaN at token 13: only rows 13.. (which see it) are NaN; rows before it equal those of a finite token', async () => {
  const mha = await gqaModule();
  try {
    const poisoned = tokens(NaN);
    const { output } = await mha.forward(poisoned, poisoned, poisoned, { isCausal: true });
    assert.deepEqual(rowsWithNaN(output), [...Array(T - POISONED).keys()].map((k) => POISONED + k));
    const clean = tokens(0.5);
    const reference = (await mha.forward(clean, clean, clean, { isCausal: true })).output;
    for (let i = 0; i < POISONED; i++) assert.deepEqual(row(output, i), row(reference, i), `row ${i}`);
  } finally {
    mha.dispose();
  }
});

test('a keyPaddingMask on the NaN / Inf token keeps every other row finite, weights of masked keys exactly 0', async () => {
  const mha = await gqaModule();
  try {
    const kpm = { data: new Uint8Array(T), shape: [1, T] };
    kpm.data[POISONED] = 1;
    for (const value of [NaN, Infinity]) {
      const x = tokens(value);
      const key = tokens(value);
      const query = randomTensor([1, T, E], rng(6));  // a finite query for every row
      const { output, attnWeights } = await mha.forward(query, key, x, { keyPaddingMask: kpm, needWeights: true });
      assert.deepEqual(rowsWithNaN(output), [], `${value}: no NaN row`);
      assert.ok(output.data.every(Number.isFinite), `${value}: every output finite`);
      for (let i = 0; i < T; i++) assert.equal(attnWeights.data[i * T + POISONED], 0, `${value}: weight of row ${i} on the masked key`);
    }
  } finally {
    mha.dispose();
  }
});

test('chunked (cached) and full forwards give the same rows with a NaN at token 13', async () => {
  const mha = await gqaModule();
  try {
    const x = tokens(NaN);
    const full = (await mha.forward(x, x, x, { isCausal: true })).output;
    const cache = mha.createCache({ batchSize: 1, maxLength: T });
    let at = 0;
    for (const n of [8, 12, 10]) {  // the chunk of 12 holds token 13 and rows before it
      const part = { data: x.data.slice(at * E, (at + n) * E), shape: [1, n, E] };
      const { output } = await mha.forward(part, part, part, { cache });
      for (let i = 0; i < n; i++) {
        const got = row(output, i);
        const want = row(full, at + i);
        if (at + i >= POISONED) assert.ok(got.every(Number.isNaN), `row ${at + i} sees the NaN`);
        else assert.ok(got.every((v, c) => Math.abs(v - want[c]) <= 1e-5), `row ${at + i}: ${got[0]} vs ${want[0]}`);
      }
      at += n;
    }
    cache.dispose();
  } finally {
    mha.dispose();
  }
});

// A cache that never stored an Inf or NaN skips the search for hidden non-finite keys (its finite
// flag, set by every append): once token 13's NaN is appended, the steps after it must search
// again, here for a stale ring slot that still holds the NaN outside every later row's window.
for (const dtype of ['float32', 'float16', 'int8']) {
  test(`decoding token by token through a windowed ${dtype} ring: rows whose window has left the NaN token are exactly the finite run's`, async () => {
    const mha = await gqaModule();
    const window = 4;
    const decode = async (x) => {
      const cache = mha.createCache({ batchSize: 1, window, dtype });
      const rows = [];
      for (let i = 0; i < T; i++) {
        const step = { data: x.data.slice(i * E, (i + 1) * E), shape: [1, 1, E] };
        rows.push(Array.from((await mha.forward(step, step, step, { cache })).output.data));
      }
      cache.dispose();
      return rows;
    };
    try {
      const poisoned = await decode(tokens(NaN));
      const clean = await decode(tokens(0.5));
      for (let i = 0; i < T; i++) {
        const seesIt = i >= POISONED && i < POISONED + window;
        if (seesIt) assert.ok(poisoned[i].every(Number.isNaN), `row ${i} sees the NaN`);
        else assert.deepEqual(poisoned[i], clean[i], `row ${i}`);
      }
    } finally {
      mha.dispose();
    }
  });
}
