// The state-dict entry names are listed once per language (issue 36): web/src/storage/
// state_dict_entries.js in JS, kStateDictEntryNames in cpp/include/webattention/state_dict_entries.h
// in C++. This reads the core's list through the binding (stateDictEntryNames) and checks that the
// two say the same, that the modules' own parameterSpecs() use those names and no others, and that
// the JS parameter layout places every one of them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CoreMha, coreConfig, resolveMhaConfig } from '../internals.mjs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { requireGroup } from '../../web/src/wasm/core_binding.js';
import { ENTRY_NAMES } from '../../web/src/storage/state_dict_entries.js';
import { parameterLayout } from '../../web/src/storage/parameter_layout.js';

const { core } = await loadNodeCore(pickVariant());

// Between them, every entry: packed and separate projections, all, some and no biases, qk-norm, sinks.
const MODULES = [
  { embedDim: 8, numHeads: 2 },
  { embedDim: 8, numHeads: 2, kdim: 6, vdim: 4, bias: { q: true, k: false, v: true, out: false } },
  { embedDim: 8, numHeads: 2, numKvHeads: 1, bias: { q: false, k: true, v: false, out: true }, qkNorm: {}, sinks: true },
];

const specNames = (options) => {
  const mha = new CoreMha(core);
  assert.equal(mha.configure(coreConfig(resolveMhaConfig(options))), '');
  const names = JSON.parse(mha.parameterSpecs()).map((s) => s.name);
  mha.delete();
  return names;
};

test('the JS entry names are the core\'s (kStateDictEntryNames), in the same order', () => {
  assert.deepEqual(JSON.parse(requireGroup(core, 'inspection').stateDictEntryNames()), [...ENTRY_NAMES]);
});

test('every module\'s parameterSpecs() names come from the list, in its order, and together use all of it', () => {
  const used = new Set();
  for (const options of MODULES) {
    const names = specNames(options);
    const positions = names.map((name) => ENTRY_NAMES.indexOf(name));
    assert.ok(positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1])), `${JSON.stringify(options)}: ${names}`);
    names.forEach((name) => used.add(name));
  }
  assert.deepEqual([...used].sort(), [...ENTRY_NAMES].sort());
});

test('the parameter layout places exactly the listed entries', () => {
  const config = resolveMhaConfig(MODULES[0]);
  assert.deepEqual(Object.keys(parameterLayout(config).entries), [...ENTRY_NAMES]);
});
