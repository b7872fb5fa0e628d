// The WASM core's exported surface as web/src/core_exports.js wraps it (cpp/bindings/exports.cpp):
// records written by field name from the core's own field lists, error texts that the JS side
// frees, and handles that refuse use after delete().
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RECORD, coreConfig, recordFieldNames, resolveMhaConfig } from '../internals.mjs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/variant.js';

const { core } = await loadNodeCore(pickVariant());
const config = (options) => coreConfig(resolveMhaConfig({ embedDim: 8, numHeads: 2, ...options }));

const fieldNames = (kind) => recordFieldNames(core, kind);

test('every MhaConfig field the core reads is one that coreConfig() writes, and none is unread', () => {
  const names = fieldNames(RECORD.config);
  const written = config({ rotary: { dim: 2 }, qkNorm: {}, softcap: 30, sinks: true });
  const paths = (o, prefix = '') => Object.entries(o).flatMap(([k, v]) =>
    (v !== null && typeof v === 'object' ? paths(v, `${prefix}${k}.`) : [`${prefix}${k}`]));
  // weightsDtype goes as a string argument of its own (wa_mha_configure), not in the record.
  assert.deepEqual([...names].sort(), paths(written).filter((p) => p !== 'weightsDtype').sort());
  assert.equal(new Set(names).size, names.length);
});

test('the forward and sdpa records list the fields the executors write, masks as dotted paths', () => {
  const mask = ['kind', 'address', 'rank', 'shape.0', 'shape.1', 'shape.2'];
  assert.deepEqual(fieldNames(RECORD.forward), ['batch', 'L', 'S', 'query', 'key', 'value',
    ...mask.map((m) => `keyPaddingMask.${m}`), ...mask.map((m) => `attnMask.${m}`),
    'isCausal', 'output', 'weights', 'averageWeights', 'positionIds']);
  assert.deepEqual(fieldNames(RECORD.sdpa), ['N', 'L', 'S', 'dk', 'dv', 'q', 'k', 'v', ...mask.map((m) => `attnMask.${m}`),
    'isCausal', 'scale', 'output', 'weights']);
});

test('a record without one of its fields is a TypeError naming it, and frees its scratch', () => {
  const before = core.memoryInUse();
  const mha = new core.Mha();
  const { softcap, ...partial } = config();
  assert.equal(softcap, 0);
  assert.throws(() => mha.configure(partial), (e) => e instanceof TypeError && /core argument softcap: expected a number/.test(e.message));
  assert.equal(mha.configure(config()), '', 'the complete record configures');
  mha.delete();
  assert.equal(core.memoryInUse(), before);
});

test('error texts come back whole and are freed: many failing calls leave the heap as it was', () => {
  const mha = new core.Mha();
  assert.equal(mha.configure(config()), '');
  const before = core.memoryInUse();
  for (let i = 0; i < 200; i++) {
    const error = mha.loadParameter(`no_such_entry_${i}`, 0, 1, 'float32');
    assert.match(error, new RegExp(`^StateDictError\\|no_such_entry_${i}\\|`));
  }
  assert.match(mha.configure({ ...config(), embedDim: 0 }), /^ConfigError\|embed_dim\|embed_dim: expected an integer >= 1, got 0$/);
  assert.match(core.kvRingGeometry(0, 0).error, /^ConfigError\|/);
  assert.equal(core.memoryInUse(), before);
  mha.delete();
});

test('a handle refuses use after delete(), and says so', () => {
  const mha = new core.Mha();
  const cache = new core.KvCache();
  assert.equal(cache.length(), 0, 'a cache without storage is empty');
  cache.delete();
  mha.delete();
  assert.ok(mha.isDeleted() && cache.isDeleted());
  assert.throws(() => mha.parameterSpecs(), /core object used after delete\(\)/);
  assert.throws(() => cache.delete(), /core object used after delete\(\)/);
});
