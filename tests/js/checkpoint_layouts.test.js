// loadStateDict({ layout }) on checkpoints named as Hugging Face (Llama, Qwen2, Phi-3, Gemma),
// GPT-2 and BERT name them, with the score options they need (bias per projection, scale,
// softcap): each file of tests/fixtures/checkpoints/ (make_checkpoint_fixtures.py, float64 truth)
// through loadSafetensors → loadStateDict → plain, causal and cached forwards. Runs on whichever
// WASM module and thread count the environment picks (WEBATTENTION_WASM, WEBATTENTION_THREADS).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as api from '#webattention';
import { runCheckpointCase } from '../contract/run_checkpoint.mjs';

const dir = new URL('../fixtures/checkpoints/', import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL('checkpoints.json', dir), 'utf8'));
export const checkpointBytes = (c) => readFileSync(new URL(c.file, dir));

// create() options for a title: a rotary table by its shape only.
const options = (create) => JSON.stringify(create, (key, value) => (key === 'table' ? `[${value.cos.shape}]` : value));

for (const c of cases) {
  const ids = c.positionIds ? ', positionIds' : '';
  test(`${c.name} (layout '${c.load.layout}', ${options(c.create)}${ids}): plain, causal and cached forwards, cache.read()`, async () => {
    const result = await runCheckpointCase(api, c, checkpointBytes(c));
    for (const pass of ['full', 'causal', 'cached', 'cacheKey', 'cacheValue']) assert.ok(result[pass].ok, `${pass}: ${result[pass].detail}`);
  });
}

test('every layout and score option has a case', () => {
  assert.deepEqual(new Set(cases.map((c) => c.load.layout)), new Set(['torch', 'hf', 'gpt2', 'bert']));
  assert.ok(cases.some((c) => c.create.softcap) && cases.some((c) => c.create.scale));
  assert.ok(cases.some((c) => Object.values(c.create.bias).some((b) => b) && !c.create.bias.out));
  // positionIds: with θ_j (llama3 scaling) and with a given table.
  assert.ok(cases.some((c) => c.positionIds && c.create.rotary?.scaling?.type === 'llama3'));
  assert.ok(cases.some((c) => c.positionIds && c.create.rotary?.table));
});
