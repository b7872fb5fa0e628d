// The char-level GPT runner (web/model/) against PyTorch's golden data (web/model/golden.json,
// float64 from the same F16 weights): logits at every prompt position and at steps past the
// 128-character window within 1e-4, and the 200-character greedy continuation exactly. On the
// calling thread (threads: 1) and with the worker pool (threads: 2; cache calls stay on the
// calling thread), on whichever WASM module the run picked (scripts/test.sh runs tests/js on each).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OptionError } from '#webattention';
import { generate } from '../../web/model/generate.js';
import { loadNodeModel } from '../../web/model/load_node.js';
import { BAD_IDS, checkPromptLogits, golden, walkGoldenSteps } from './char_gpt_golden.mjs';

for (const threads of [1, 2]) {
  describe(`char-gpt with threads: ${threads}`, () => {
    let model;
    before(async () => { model = await loadNodeModel({ threads }); });
    after(() => model.dispose());

    test('configuration from the file metadata; attention on WASM', () => {
      assert.equal(model.tokenizer.vocab.join(''), golden.vocab);
      assert.deepEqual(model.tokenizer.encode(golden.prompt), golden.promptIds);
      assert.equal(model.config.window, 128);
      assert.equal(model.backend, 'wasm');
      assert.equal(model.threads, threads);
    });

    test('prompt logits (one prefill forward) within 1e-4 at every position', async () => {
      model.reset();
      const { logits } = await model.forward(golden.promptIds);
      checkPromptLogits(logits);
    });

    test('step logits one token at a time, past the window (positions 127 … 212) within 1e-4', async () => {
      model.reset();
      await model.forward(golden.promptIds);
      await walkGoldenSteps(model, async (id) => (await model.forward([id])).logits);
    });

    test('greedy generate(): the 200-character continuation equals PyTorch exactly', async () => {
      let text = '';
      let ms = 0;
      for await (const step of generate(model, golden.prompt, { maxTokens: golden.continuationLength })) {
        assert.equal(step.position, golden.promptIds.length - 1 + step.index);
        text += step.char;
        ms += step.ms;
      }
      assert.equal(text, golden.greedyContinuation);
      assert.ok(ms > 0);
    });

    test('generate() with attention: per layer and head, the last query row over its window, summing to 1', async () => {
      const window = model.config.window;
      const { layers, numHeads } = model.config;
      let count = 0;
      for await (const step of generate(model, golden.prompt, { maxTokens: 130, attention: true })) {
        const keys = Math.min(step.position + 1, window);
        assert.equal(step.attention.keyStart, step.position + 1 - keys);
        assert.equal(step.attention.layers.length, layers);
        for (const heads of step.attention.layers) {
          assert.equal(heads.length, numHeads);
          for (const row of heads) {
            assert.equal(row.length, keys);
            assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-5);
          }
        }
        count++;
      }
      assert.equal(count, 130);
    });
  });
}

test('sampled generation repeats with its seed; bad prompts, options and ids are OptionErrors', async () => {
  const model = await loadNodeModel({ threads: 1 });
  try {
    const run = async (seed) => {
      let text = '';
      for await (const step of generate(model, golden.prompt, { maxTokens: 60, temperature: 0.8, topK: 10, seed })) text += step.char;
      return text;
    };
    const first = await run(5);
    assert.equal(await run(5), first);
    assert.notEqual(await run(6), first);
    const drain = async (prompt, options) => { for await (const _ of generate(model, prompt, options)); };
    await assert.rejects(drain('', {}), (e) => e instanceof OptionError && e.argument === 'prompt');
    await assert.rejects(drain('And God said, #', {}), (e) => e instanceof OptionError && e.argument === 'prompt');
    await assert.rejects(drain('And', { maxTokens: 0 }), (e) => e instanceof OptionError && e.argument === 'maxTokens');
    for (const ids of BAD_IDS) await assert.rejects(model.forward(ids), (e) => e instanceof OptionError && e.argument === 'ids', JSON.stringify(ids));
  } finally {
    model.dispose();
  }
});
