// The char-level GPT (web/model/) with its attention weights and KV caches stored in 16 and 8
// bits (create({ weightsDtype }), createCache({ dtype }); docs/attention-math/storage.md §11) against
// PyTorch's golden data (web/model/golden.json, float64 from the file's F16 weights). The file
// is F16, so float16 weights hold exactly the values float32 weights do: the golden tolerance
// (1e-4) and the golden greedy text. The other dtypes round or quantise: their greedy
// 200-character continuation must still be golden's, and their logits must differ from the
// float32 model's (the narrow storage is in use). bench/prefill/char_dtypes.mjs prints each dtype's
// logit difference and tokens/s.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { generate } from '../../web/model/generate.js';
import { loadNodeModel } from '../../web/model/load_node.js';

const golden = JSON.parse(readFileSync(new URL('../../web/model/golden.json', import.meta.url), 'utf8'));
const TOLERANCE = 1e-4;  // as tests/js/char_gpt.test.js

const maxAbsDiff = (expected, actual) => expected.reduce((d, v, j) => Math.max(d, Math.abs(v - actual[j])), 0);

async function greedyText(model) {
  let text = '';
  for await (const step of generate(model, golden.prompt, { maxTokens: golden.continuationLength })) text += step.char;
  return text;
}

async function promptLogits(model) {
  model.reset();
  return (await model.forward(golden.promptIds)).logits;
}

describe('float16 weights from the F16 file (float32 caches): the float32 model exactly', () => {
  let model;
  before(async () => { model = await loadNodeModel({ threads: 1, weightsDtype: 'float16' }); });
  after(() => model.dispose());

  test('prompt logits and steps past the window within 1e-4 of golden', async () => {
    const logits = await promptLogits(model);
    const width = golden.vocab.length;
    golden.promptLogits.forEach((row, r) => {
      const d = maxAbsDiff(row, logits.subarray(r * width, (r + 1) * width));
      assert.ok(d < TOLERANCE, `position ${r}: max |logit - golden| = ${d}`);
    });
    for (const [step, id] of golden.greedyIds.entries()) {
      const { logits: stepLogits } = await model.forward([id]);
      const expected = golden.stepLogits.find((s) => s.step === step + 1);
      if (expected) assert.ok(maxAbsDiff(expected.logits, stepLogits) < TOLERANCE, `step ${expected.step}`);
    }
  });

  test('greedy continuation equals golden', async () => {
    assert.equal(await greedyText(model), golden.greedyContinuation);
  });
});

// [weightsDtype, cacheDtype, activations]
const NARROW = [['float16', 'float16'], ['bfloat16', 'float32'], ['bfloat16', 'float16'], ['int8', 'float32'], ['int8', 'int8'],
  ['int8', 'float32', 'int8'], ['int4', 'float32', 'int8']];

describe('rounded and quantised storage: golden greedy text, logits not float32\'s', () => {
  let reference;
  before(async () => {
    const model = await loadNodeModel({ threads: 1 });
    reference = await promptLogits(model);
    model.dispose();
  });

  for (const [weightsDtype, cacheDtype, activations] of NARROW) {
    test(`${weightsDtype} weights, ${cacheDtype} cache${activations ? `, ${activations} activations` : ''}`, async () => {
      const model = await loadNodeModel({ threads: 1, weightsDtype, cacheDtype, activations });
      try {
        const d = maxAbsDiff(reference, await promptLogits(model));
        assert.ok(d > 0, 'prompt logits identical to the float32 model: the storage option was not applied');
        assert.ok(Number.isFinite(d), `prompt logits: max |Δ| vs float32 ${d}`);
        assert.equal(await greedyText(model), golden.greedyContinuation, `(prompt logits max |Δ| vs float32 ${d})`);
      } finally {
        model.dispose();
      }
    });
  }
});
