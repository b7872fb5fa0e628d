// Scores of −∞ by arithmetic (an infinite query or key), not by a mask: PyTorch's rule, which the
// package follows (docs/attention-math/heads.md §4). torch 1.13's nn.MultiheadAttention(batch_first),
// float32 and float64 alike, with weights as below: a row whose keys all score −∞ is NaN, output
// and weights (softmax's exp(−∞ − −∞)); a key of score −∞ among finite ones has weight 0 and still
// adds 0 · its value, NaN when the value is infinite (weights [0, 1], output NaN); with finite
// values that row is exactly the other key's. Only the masks make a key absent or a row zero (the
// package's two documented differences). Before the fix, the float64 references gave the first
// rows zero and dropped the −∞ key; WASM gave zero rows for finite values and added the infinite
// value's 0 · Inf only where its 4-row blocks skipped the search for hidden keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { compare, mhaReference } from '../contract/contract.mjs';

const tensor = (rows, E) => ({ data: Float32Array.from(rows.flat()), shape: [1, rows.length, E] });
const I = [[1, 0], [0, 1]];
const ONES = [[1, 1], [1, 1]];

/** A module of embedDim 2, one head, W_q, W_k, W_v as given, no in-projection bias, out_proj I + 0.25. */
async function module2(wq, wk, wv) {
  const mha = await MultiHeadAttention.create({ embedDim: 2, numHeads: 1 });
  const sd = {
    in_proj_weight: { data: Float32Array.from([wq, wk, wv].flat(2)), shape: [6, 2] },
    in_proj_bias: { data: new Float32Array(6), shape: [6] },
    'out_proj.weight': { data: Float32Array.from(I.flat()), shape: [2, 2] },
    'out_proj.bias': { data: Float32Array.from([0.25, 0.25]), shape: [2] },
  };
  mha.loadStateDict(sd);
  return { mha, sd };
}

/** forward() against the float64 reference, output and (per-head) weights. */
async function checkForward(mha, sd, q, k, v, options, label) {
  const got = await mha.forward(q, k, v, { ...options, needWeights: true, averageAttnWeights: false });
  const want = mhaReference(mha.config, sd, q, k, v, { ...options, needWeights: true, averageAttnWeights: false });
  const L = q.shape[1], S = k.shape[1];
  for (const [name, actual, expected, shape] of [['output', got.output, want.output, q.shape], ['weights', got.attnWeights, want.weights, [1, 1, L, S]]]) {
    const r = compare(actual, { data: expected, shape });
    assert.ok(r.ok, `${label} ${name}: ${r.detail}`);
  }
  return got;
}

const allNaN = (t) => t.data.every(Number.isNaN);

test('embedDim 1, x = [±Inf]: NaN output and weights, plain, causal and cached, as PyTorch', async () => {
  for (const [wq, wk, wv] of [[0.5, -0.7, 0.3], [0.5, 0.7, -0.3], [-1, 1, 1]]) {
    const mha = await MultiHeadAttention.create({ embedDim: 1, numHeads: 1 });
    const sd = {
      in_proj_weight: { data: Float32Array.from([wq, wk, wv]), shape: [3, 1] },
      in_proj_bias: { data: Float32Array.from([0.1, -0.2, 0.3]), shape: [3] },
      'out_proj.weight': { data: Float32Array.from([2]), shape: [1, 1] },
      'out_proj.bias': { data: Float32Array.from([0.25]), shape: [1] },
    };
    mha.loadStateDict(sd);
    try {
      for (const value of [-Infinity, Infinity]) {
        const x = tensor([[value]], 1);
        for (const [name, options] of [['plain', {}], ['causal', { isCausal: true }]]) {
          const got = await checkForward(mha, sd, x, x, x, options, `${[wq, wk, wv]} x ${value} ${name}`);
          assert.ok(allNaN(got.output) && allNaN(got.attnWeights), `${name}: ${got.output.data} / ${got.attnWeights.data}`);
        }
        const cache = mha.createCache({ batchSize: 1, maxLength: 4 });
        const { output, attnWeights } = await mha.forward(x, x, x, { cache, needWeights: true });
        cache.dispose();
        assert.ok(allNaN(output) && allNaN(attnWeights), `cached x ${value}: ${output.data} / ${attnWeights.data}`);
      }
    } finally {
      mha.dispose();
    }
  }
});

test('every key of a row scoring -Inf by arithmetic, finite values: NaN (PyTorch), not the zero row of a fully masked one', async () => {
  const { mha, sd } = await module2(ONES, ONES, I);
  try {
    const q = tensor([[-Infinity, 0], [0.5, 0.25]], 2);  // row 0: q = [-Inf, -Inf], keys k = [s, s], s > 0
    const k = tensor([[1, 0], [2, 1], [0.5, 0.5]], 2);
    const v = tensor([[1, 2], [3, 4], [5, 6]], 2);
    for (const [name, options] of [['no mask', {}], ['one key masked', { keyPaddingMask: { data: Uint8Array.from([0, 1, 0]), shape: [1, 3] } }]]) {
      const got = await checkForward(mha, sd, q, k, v, options, name);
      assert.ok(got.output.data.subarray(0, 2).every(Number.isNaN), `${name}: row 0 ${got.output.data.subarray(0, 2)}`);
      assert.ok(got.output.data.subarray(2).every(Number.isFinite), `${name}: row 1 ${got.output.data.subarray(2)}`);
    }
    // Every key masked: the package's zero row (output = out_proj.bias), the infinite query or not.
    const all = await checkForward(mha, sd, q, k, v, { keyPaddingMask: { data: Uint8Array.from([1, 1, 1]), shape: [1, 3] } }, 'all masked');
    assert.deepEqual(Array.from(all.output.data), [0.25, 0.25, 0.25, 0.25]);
  } finally {
    mha.dispose();
  }
});

test('a key of score -Inf with an infinite value: weight 0, output NaN (0 · Inf, PyTorch); with a finite value, the other key exactly; masked, absent', async () => {
  const { mha, sd } = await module2(I, ONES, ONES);
  try {
    const q = tensor([[1, 1]], 2);
    const k = tensor([[-Infinity, 0], [1, 0]], 2);  // scores -Inf and 2
    for (const [value, expected] of [[[Infinity, 1], [NaN, NaN]], [[5, 1], [7.25, 7.25]]]) {
      const v = tensor([value, [3, 4]], 2);
      const got = await checkForward(mha, sd, q, k, v, {}, `value ${value}`);
      assert.deepEqual(Array.from(got.output.data), expected, `value ${value}`);
      assert.deepEqual(Array.from(got.attnWeights.data), [0, 1], `value ${value}`);
      const masked = await checkForward(mha, sd, q, k, v, { keyPaddingMask: { data: Uint8Array.from([1, 0]), shape: [1, 2] } }, `value ${value}, masked`);
      assert.deepEqual(Array.from(masked.output.data), [7.25, 7.25], `value ${value}, masked: absent`);
    }
  } finally {
    mha.dispose();
  }
});

// Causal, 13 positions, the -Inf key and Inf value at position 5 (every row scores it -Inf): every
// row from 5 on adds 0 · Inf, those in the 4-row block of the diagonal (4..7) and the later ones
// alike; the rows before it stay finite.
test('causal: the -Inf-score key with an infinite value makes every row that may see it NaN, whatever its 4-row block', async () => {
  const { mha, sd } = await module2(I, ONES, ONES);
  const T = 13, AT = 5;
  const rows = (f) => Array.from({ length: T }, (_, i) => f(i));
  const q = tensor(rows((i) => [0.1 + 0.07 * i, 0.9 - 0.05 * i]), 2);
  const k = tensor(rows((i) => (i === AT ? [-Infinity, 0] : [Math.sin(i), Math.cos(i)])), 2);
  const v = tensor(rows((i) => (i === AT ? [Infinity, 1] : [i, -i / 2])), 2);
  try {
    const got = await checkForward(mha, sd, q, k, v, { isCausal: true }, 'causal');
    const nanRows = rows((i) => i).filter((i) => Number.isNaN(got.output.data[2 * i]));
    assert.deepEqual(nanRows, rows((i) => i).filter((i) => i >= AT));
    for (let i = AT; i < T; i++) assert.equal(got.attnWeights.data[i * T + AT], 0, `row ${i}: weight of the -Inf key`);
  } finally {
    mha.dispose();
  }
});
