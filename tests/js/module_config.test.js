// A module's config fields, listed once (web/src/checks/module_config.js), against what else names them:
// the options create() takes, the resolved config, the core's MhaConfig, and index.d.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { MultiHeadAttention, OptionError } from '#webattention';
import { CREATE_OPTIONS, coreConfig } from '../internals.mjs';

// The hand-written types: web/index.d.ts and the files it re-exports (web/types/).
const dts = ['index.d.ts', 'types/module_options.d.ts'].map((f) => readFileSync(new URL(`../../web/${f}`, import.meta.url), 'utf8')).join('\n');

/** The member names an interface of index.d.ts declares in its own body. */
function members(name) {
  const body = dts.match(new RegExp(`export interface ${name}\\b[^{]*\\{([\\s\\S]*?)\\n\\}`))?.[1];
  assert.ok(body, `index.d.ts declares ${name}`);
  return [...body.matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)].map((m) => m[1]);
}

const sorted = (names) => [...names].sort();

test('index.d.ts MultiHeadAttentionOptions names every option create() takes, and no other', async () => {
  assert.deepEqual(sorted(members('MultiHeadAttentionOptions')), sorted(CREATE_OPTIONS));
  await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, numKVHeads: 1 }),
    (e) => e instanceof OptionError && e.argument === 'numKVHeads' && e.expected.join() === CREATE_OPTIONS.join());
});

test('the resolved config has the fields index.d.ts ResolvedMultiHeadAttentionConfig gives it', async () => {
  const omitted = dts.match(/ResolvedMultiHeadAttentionConfig\s+extends Required<Omit<MultiHeadAttentionOptions, ([^>]*)>>/)[1]
    .split('|').map((s) => s.trim().slice(1, -1));
  const declared = [...members('MultiHeadAttentionOptions').filter((n) => !omitted.includes(n)),
    ...members('ResolvedMultiHeadAttentionConfig')];
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, numKvHeads: 1, rotary: {} });
  try {
    assert.deepEqual(sorted(Object.keys(mha.config)), sorted(declared));
  } finally {
    mha.dispose();
  }
});

test("the core's MhaConfig fields: every config field, rotary as three, no softcap as 0", () => {
  const bias = { q: true, k: true, v: true, out: false };
  const config = { embedDim: 8, numHeads: 2, kdim: 8, vdim: 8, headDim: 4, valueHeadDim: 4, bias, numKvHeads: 1, rotary: null, scale: 0.5, softcap: null, sinks: true, qkNorm: { eps: 1e-5 }, weightsDtype: 'int8', activations: 'int8' };
  assert.deepEqual(coreConfig(config), {
    embedDim: 8, numHeads: 2, kdim: 8, vdim: 8, headDim: 4, valueHeadDim: 4, bias, numKvHeads: 1,
    rotaryDim: 0, rotaryBase: 10000, rotaryInterleaved: false, scale: 0.5, softcap: 0, sinks: true,
    qkNorm: true, qkNormEps: 1e-5, rotaryScaling: 0, rotaryFactor: 1, rotaryLowFreqFactor: 1, rotaryHighFreqFactor: 4, rotaryOriginalMaxPositions: 8192, weightsDtype: 'int8',
    activations: 'int8',
  });
  assert.deepEqual(coreConfig({ ...config, rotary: { base: 500, interleaved: true, dim: 2, scaling: null } }),
    { ...coreConfig(config), rotaryDim: 2, rotaryBase: 500, rotaryInterleaved: true });
  const llama3 = { type: 'llama3', factor: 8, lowFreqFactor: 2, highFreqFactor: 3, originalMaxPositions: 64 };
  assert.deepEqual(coreConfig({ ...config, rotary: { base: 500, interleaved: false, dim: 2, scaling: llama3 } }),
    { ...coreConfig(config), rotaryDim: 2, rotaryBase: 500, rotaryScaling: 2, rotaryFactor: 8, rotaryLowFreqFactor: 2,
      rotaryHighFreqFactor: 3, rotaryOriginalMaxPositions: 64 });
});
