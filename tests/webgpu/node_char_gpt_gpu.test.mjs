// The char-level GPT with everything on the GPU (web/model/char_gpt_gpu.js: the model's own
// kernels, gpu_ops.js, around the package's attention, a GpuStep a token) against PyTorch's golden
// data (web/model/golden.json, float64 from the same F16 weights), with char_gpt.test.js's
// tolerance: the logits at every prompt position and at the steps past the 128-character window
// within 1e-4, and each step's greedy choice golden's (the 200-character continuation), the same
// positions through a long prompt's chunks (a GpuBatch each). A token is one queue.submit() and
// its logits the one readback; generate() runs it as it runs CharGpt, the
// same text again after reset(); calls made together run in turn, dispose() stops them and destroys the step's buffer; needWeights and ids outside the vocabulary are refused. Set-up: node_setup.mjs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as api from '#webattention';
import { CharGptGpu, PREFILL_ROWS } from '../../web/model/char_gpt_gpu.js';
import { MODEL_FILE } from '../../web/model/load_node.js';
import { generate } from '../../web/model/generate.js';
import { adapterName, device } from './node_setup.mjs';
import { counted } from './gpu_batch_steps.mjs';
import { BAD_IDS, TOLERANCE, checkPromptLogits, golden, maxDiff, walkGoldenSteps } from '../js/char_gpt_golden.mjs';

const vocab = golden.vocab.length;
const argmax = (row) => row.reduce((best, v, j) => (v > row[best] ? j : best), 0);

describe(`char-gpt on the GPU (Dawn, ${adapterName})`, () => {
  let model;
  before(async () => { model = await CharGptGpu.load(api, readFileSync(MODEL_FILE), { gpu: device }); });
  after(() => model.dispose());

  test('prompt logits within 1e-4 at every position, then each step past the window: logits within 1e-4, the greedy choice golden\'s', async () => {
    assert.equal(model.backend, 'webgpu');
    const { logits } = await model.forward(golden.promptIds);
    checkPromptLogits(logits);
    let next = argmax(logits.subarray(logits.length - vocab));
    await walkGoldenSteps(model, async (id, step) => {
      assert.equal(next, id, `step ${step}: the greedy choice`);
      const { submits, maps, result: { logits: row } } = await counted(() => model.forward([id]));
      assert.deepEqual([submits, maps], [1, 1], `step ${step}: one submit and one readback a token`);
      next = argmax(row);
      return row;
    });
  });

  test('a prompt in chunks of PREFILL_ROWS: one submit and one readback a chunk; golden\'s logits at the positions past the window', async () => {
    model.reset();
    const ids = [...golden.promptIds, ...golden.greedyIds];  // 214 rows: four chunks
    const { submits, maps, result: { logits } } = await counted(() => model.forward(ids));
    const chunks = Math.ceil(ids.length / PREFILL_ROWS);
    assert.ok(chunks >= 3, `${chunks} chunks`);
    assert.deepEqual([submits, maps], [chunks, chunks]);
    checkPromptLogits(logits.subarray(0, golden.promptIds.length * vocab));
    for (const { position, logits: expected } of golden.stepLogits) {
      const d = maxDiff(expected, logits, position);
      assert.ok(d < TOLERANCE, `position ${position}: max |logit - golden| = ${d}`);
    }
    // Then a token a step again, the step recorded before the chunks replayed at the new length.
    const { logits: next } = await model.forward([golden.greedyIds.at(-1)]);
    assert.equal(model.length, ids.length + 1);
    assert.ok(next.every(Number.isFinite));
  });

  test('generate() runs it as CharGpt: golden\'s greedy start, the same again after reset()', async () => {
    const text = async () => {
      let out = '';
      for await (const step of generate(model, golden.prompt, { maxTokens: 24 })) {
        assert.equal(step.position, golden.promptIds.length - 1 + step.index);
        out += step.char;
      }
      return out;
    };
    const first = await text();
    assert.equal(first, golden.greedyContinuation.slice(0, 24));
    model.reset();
    assert.equal(model.length, 0);
    assert.equal(await text(), first);
  });

  test('forward() calls made together run in turn: the logits of the same calls made one after the other', async () => {
    const [a, b] = [golden.promptIds.slice(0, 4), golden.promptIds.slice(4, 6)];
    model.reset();
    const together = await Promise.all([model.forward(a), model.forward(b)]);
    model.reset();
    const inTurn = [await model.forward(a), await model.forward(b)];
    assert.deepEqual(together.map((r) => r.logits), inTurn.map((r) => r.logits));
    assert.equal(model.length, 6);
  });

  test('dispose() during a forward(): it rejects with a DisposedError, as later calls do', async () => {
    const own = await CharGptGpu.load(api, readFileSync(MODEL_FILE), { gpu: device });
    await own.forward([1]);
    const running = own.forward(golden.promptIds);
    own.dispose();
    const disposed = (e) => e.name === 'DisposedError' && e.argument === 'model';
    await assert.rejects(running, disposed);
    await assert.rejects(own.forward([1]), disposed);
  });

  test("dispose() destroys its GpuStep's uniform buffer too", async () => {
    const own = await CharGptGpu.load(api, readFileSync(MODEL_FILE), { gpu: device });
    const made = [];
    const proto = Object.getPrototypeOf(device);
    const createBuffer = proto.createBuffer;
    proto.createBuffer = function keeping(descriptor) { const b = createBuffer.call(this, descriptor); made.push(b); return b; };
    try {
      await own.forward([1]);  // the step recorded
    } finally {
      proto.createBuffer = createBuffer;
    }
    const uniforms = made.filter((b) => b.label === 'webattention step uniforms');
    assert.equal(uniforms.length, 1);
    let destroyed = 0;
    for (const b of uniforms) b.destroy = function counting() { destroyed++; return Object.getPrototypeOf(b).destroy.call(b); };
    own.dispose();
    assert.equal(destroyed, 1);
  });

  test('needWeights and bad ids: OptionErrors naming them, nothing appended, and the model goes on', async () => {
    model.reset();
    await assert.rejects(model.forward(golden.promptIds, { needWeights: true }), (e) => e.name === 'OptionError' && e.argument === 'needWeights');
    for (const ids of BAD_IDS) await assert.rejects(model.forward(ids), (e) => e.name === 'OptionError' && e.argument === 'ids', JSON.stringify(ids));
    assert.equal(model.length, 0);
    const { logits } = await model.forward(golden.promptIds.slice(0, 3));
    assert.ok(maxDiff(golden.promptLogits[2], logits, 2) < TOLERANCE);
  });
});
