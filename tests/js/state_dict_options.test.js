// loadStateDict(stateDict, { prefix, strict }): a module's weights out of a bigger model's state
// dict, BERT-style separate q/k/v weights, and a whole torch.nn.TransformerEncoderLayer saved as
// safetensors (tests/fixtures/make_safetensors.py) run against torch's self_attn output.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, loadSafetensors, OptionError, StateDictError } from '#webattention';
import { checkResult, compare } from '../contract/compare.mjs';
import { decodeTensor } from '../contract/decode.mjs';
import { loadFixtures } from './fixtures.js';
import { fixtureBytes, fixtureJson } from './safetensors_files.js';

const cases = loadFixtures();
const packedCase = cases.find((c) => c.name === 'kv_distinct_same_dim');   // in_proj_weight [3E, E]
const separateCase = cases.find((c) => c.name === 'cross_kdim_vdim');      // kdim, vdim != E: q/k/v_proj_weight

/** The case's forward() after `load(mha)`, checked against torch's expected values. */
async function runWith(c, load) {
  const mha = await MultiHeadAttention.create(c.create);
  try {
    load(mha);
    const { query, key, value } = c.inputs;
    return checkResult(c, await mha.forward(query, key, value, c.options));
  } finally {
    mha.dispose();
  }
}

/** A state dict with every key of `c` under `prefix`, plus what `extra` adds. */
const nested = (c, prefix, extra = {}) =>
  new Map([...Object.entries(extra), ...Object.entries(c.stateDict).map(([k, v]) => [prefix + k, v])]);

/** in_proj_weight [3E, E] as PyTorch stacks it: the three [E, E] blocks W_Q, W_K, W_V. */
function splitInProj(c) {
  const { in_proj_weight: packed, ...rest } = c.stateDict;
  const E = packed.shape[1];
  const part = (i) => ({ data: packed.data.slice(i * E * E, (i + 1) * E * E), shape: [E, E] });
  return { q_proj_weight: part(0), k_proj_weight: part(1), v_proj_weight: part(2), ...rest };
}

/** Asserts `call` throws `Class` with `argument` and every part in its message. */
function throwsNamed(call, Class, argument, parts) {
  assert.throws(call, (e) => {
    assert.ok(e instanceof Class, `expected ${Class.name}, got ${e?.name}: ${e?.message}`);
    assert.equal(e.argument, argument);
    for (const part of parts) assert.ok(e.message.includes(part), `"${e.message}" lacks "${part}"`);
    return true;
  });
}

test('a whole TransformerEncoderLayer saved as safetensors (F16, BF16, F32): prefix self_attn., strict false; forward matches torch', async () => {
  const { embedDim, numHeads, prefix, x, expected } = fixtureJson('encoder_layer.json');
  const file = loadSafetensors(fixtureBytes('encoder_layer.safetensors'));
  assert.equal(file.get('self_attn.in_proj_weight').dtype, 'F16');
  assert.equal(file.get('self_attn.out_proj.weight').dtype, 'BF16');
  assert.ok(file.has('linear1.weight') && file.has('norm2.bias'), 'the rest of the layer is in the file');
  const mha = await MultiHeadAttention.create({ embedDim, numHeads });
  try {
    mha.loadStateDict(file, { prefix, strict: false });
    const input = decodeTensor(x);
    const { output } = await mha.forward(input, input, input);
    const result = compare(output, decodeTensor(expected));
    assert.ok(result.ok, result.detail);
    // strict (the default) refuses the rest of the layer, naming the key as the file has it.
    throwsNamed(() => mha.loadStateDict(file, { prefix }), StateDictError, 'linear1.weight',
      ["unexpected key 'linear1.weight'", 'self_attn.in_proj_weight']);
    // Without the prefix nothing of the module is found: the first missing key, as it would be spelled.
    throwsNamed(() => mha.loadStateDict(file, { strict: false }), StateDictError, 'in_proj_weight', ["missing key 'in_proj_weight'"]);
    throwsNamed(() => mha.loadStateDict(file, { prefix: 'self_attn', strict: false }), StateDictError, 'self_attnin_proj_weight',
      ["missing key 'self_attnin_proj_weight'"]);
  } finally {
    mha.dispose();
  }
});

test('prefix picks one layer out of several; strict: false ignores the others', async () => {
  const other = cases.find((c) => c.name === 'self_same_input');
  const model = new Map([...nested(other, 'layers.0.self_attn.'), ...nested(packedCase, 'layers.1.self_attn.'),
    ['layers.1.linear1.weight', { data: new Float32Array(4), shape: [2, 2] }], ['embedding.weight', new Float32Array(3)]]);
  const layer1 = await runWith(packedCase, (mha) => mha.loadStateDict(model, { prefix: 'layers.1.self_attn.', strict: false }));
  assert.ok(layer1.ok, layer1.detail);
  // The module's keys alone under a prefix load with strict on; from a plain object too.
  const alone = await runWith(packedCase, (mha) => mha.loadStateDict(Object.fromEntries(nested(packedCase, 'enc.')), { prefix: 'enc.' }));
  assert.ok(alone.ok, alone.detail);
  // prefix '' and strict true are the defaults: today's behaviour.
  const plain = await runWith(packedCase, (mha) => mha.loadStateDict(packedCase.stateDict, { prefix: '', strict: true }));
  assert.ok(plain.ok, plain.detail);
});

test('strict: false still needs every key of the module: a missing one is named with its prefix', async () => {
  const model = nested(packedCase, 'attn.');
  model.delete('attn.out_proj.bias');
  const result = await runWith(packedCase, (mha) => {
    mha.loadStateDict(packedCase.stateDict);
    throwsNamed(() => mha.loadStateDict(model, { prefix: 'attn.', strict: false }),
      StateDictError, 'attn.out_proj.bias', ["missing key 'attn.out_proj.bias' (expected shape [16])"]);
  });
  assert.ok(result.ok, result.detail);
});

test('separate q_proj_weight, k_proj_weight, v_proj_weight where the module packs in_proj_weight: the same result', async () => {
  const separate = splitInProj(packedCase);
  const plain = await runWith(packedCase, (mha) => mha.loadStateDict(separate));
  assert.ok(plain.ok, plain.detail);
  // As bare Float32Arrays, under a prefix, among other keys.
  const bare = Object.fromEntries(Object.entries(separate).map(([k, v]) => [`bert.attention.${k}`, v.data]));
  const prefixed = await runWith(packedCase, (mha) => mha.loadStateDict({ ...bare, 'bert.pooler.weight': new Float32Array(1) },
    { prefix: 'bert.attention.', strict: false }));
  assert.ok(prefixed.ok, prefixed.detail);
});

test('separate q/k/v: mixed with in_proj_weight, incomplete or misshaped is a StateDictError naming the key', async () => {
  const separate = splitInProj(packedCase);
  const { q_proj_weight: q, k_proj_weight: k, ...withoutQK } = separate;
  await runWith(packedCase, (mha) => {
    throwsNamed(() => mha.loadStateDict({ ...packedCase.stateDict, k_proj_weight: k }), StateDictError, 'k_proj_weight',
      ["both 'in_proj_weight' and 'k_proj_weight' given", 'not both']);
    throwsNamed(() => mha.loadStateDict({ ...withoutQK, k_proj_weight: k }), StateDictError, 'q_proj_weight',
      ["missing key 'q_proj_weight' (expected shape [16, 16])"]);
    const underL = new Map(Object.entries({ ...withoutQK, k_proj_weight: k }).map(([name, v]) => [`l.${name}`, v])).set('q_proj_weight', q);
    throwsNamed(() => mha.loadStateDict(underL, { prefix: 'l.', strict: false }), StateDictError, 'l.q_proj_weight', ["missing key 'l.q_proj_weight'"]);
    throwsNamed(() => mha.loadStateDict({ ...separate, k_proj_weight: { data: new Float32Array(16 * 8), shape: [16, 8] } }),
      StateDictError, 'k_proj_weight', ["stateDict['k_proj_weight']: expected shape [16, 16], got [16, 8]"]);
    throwsNamed(() => mha.loadStateDict({ ...separate, v_proj_weight: new Float32Array(3) }), StateDictError, 'v_proj_weight',
      ['expected [16, 16] (256 values), got Float32Array(3)']);
    // Every refusal above left the module's weights as the first load set them.
    mha.loadStateDict(packedCase.stateDict);
  });
});

test('a module with its own q/k/v widths takes them as before, and in_proj_weight is not split for it', async () => {
  const plain = await runWith(separateCase, (mha) => mha.loadStateDict(nested(separateCase, 'x.'), { prefix: 'x.' }));
  assert.ok(plain.ok, plain.detail);
  await runWith(separateCase, (mha) => {
    mha.loadStateDict(separateCase.stateDict);
    throwsNamed(() => mha.loadStateDict({ ...separateCase.stateDict, in_proj_weight: new Float32Array(1) }), StateDictError, 'in_proj_weight',
      ["unexpected key 'in_proj_weight'"]);
  });
});

test('a failed load changes nothing: the module keeps its weights', async () => {
  const result = await runWith(packedCase, (mha) => {
    mha.loadStateDict(packedCase.stateDict);
    const broken = nested(packedCase, 'p.');
    broken.set('p.out_proj.weight', new Float32Array(5));
    assert.throws(() => mha.loadStateDict(broken, { prefix: 'p.', strict: false }), StateDictError);
    assert.throws(() => mha.loadStateDict({ ...splitInProj(packedCase), in_proj_bias: new Float32Array(2) }), StateDictError);
  });
  assert.ok(result.ok, result.detail);
});

test('options are checked like every other options object', async () => {
  await runWith(packedCase, (mha) => {
    const sd = packedCase.stateDict;
    throwsNamed(() => mha.loadStateDict(sd, { prefx: 'a.' }), OptionError, 'prefx', ["loadStateDict: unknown option 'prefx'; expected one of prefix, strict"]);
    throwsNamed(() => mha.loadStateDict(sd, { prefix: 3 }), OptionError, 'prefix', ["prefix: expected a string such as 'layers.0.self_attn.', got number 3"]);
    throwsNamed(() => mha.loadStateDict(sd, { strict: 'no' }), OptionError, 'strict', ['strict: expected a boolean, got string "no"']);
    throwsNamed(() => mha.loadStateDict(sd, 'self_attn.'), OptionError, 'loadStateDict', ['loadStateDict: expected an options object, got string']);
    throwsNamed(() => mha.loadStateDict(null, { strict: false }), StateDictError, 'stateDict', ['expected an object or Map of tensors, got null']);
    mha.loadStateDict(sd, null);
    mha.loadStateDict(sd, undefined);
  });
});
