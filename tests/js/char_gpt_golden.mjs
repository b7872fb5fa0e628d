// What the char-gpt runners' tests share (char_gpt.test.js on WASM, webgpu/node_char_gpt_gpu.test.mjs
// with the whole model on the GPU): PyTorch's golden data (web/model/golden.json), its tolerance,
// and the walk through its greedy continuation one token at a time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

export const golden = JSON.parse(readFileSync(new URL('../../web/model/golden.json', import.meta.url), 'utf8'));
export const TOLERANCE = 1e-4;

/** forward() ids the model refuses (an OptionError naming `ids`): past the vocabulary, negative, fractional, none, not an array. */
export const BAD_IDS = [[golden.vocab.length], [-1], [1.5], [], '0', [0, NaN]];

/** max |a − b| over a golden row and row `r` of a [rows, vocab] Float64Array. */
export function maxDiff(expected, logits, r) {
  let d = 0;
  expected.forEach((v, j) => { d = Math.max(d, Math.abs(v - logits[r * expected.length + j])); });
  return d;
}

/** A prompt's forward: its logits [prompt, vocab] within TOLERANCE of golden's at every position. */
export function checkPromptLogits(logits) {
  assert.equal(logits.length, golden.promptIds.length * golden.vocab.length);
  golden.promptLogits.forEach((row, r) => {
    const d = maxDiff(row, logits, r);
    assert.ok(d < TOLERANCE, `position ${r}: max |logit - golden| = ${d}`);
  });
}

/**
 * After the prompt: golden's greedy ids fed one at a time through step(id, index) (resolves to
 * that token's logits row), the logits at golden's checked steps (past the window among them)
 * within TOLERANCE at the model's position.
 */
export async function walkGoldenSteps(model, step) {
  const checked = [];
  for (const [index, id] of golden.greedyIds.entries()) {
    const logits = await step(id, index);
    const expected = golden.stepLogits.find((s) => s.step === index + 1);
    if (!expected) continue;
    assert.equal(model.length - 1, expected.position);
    const d = maxDiff(expected.logits, logits, 0);
    assert.ok(d < TOLERANCE, `step ${expected.step} (position ${expected.position}): max |logit - golden| = ${d}`);
    checked.push(expected.position);
  }
  assert.deepEqual(checked, golden.stepLogits.map((s) => s.position));
}
