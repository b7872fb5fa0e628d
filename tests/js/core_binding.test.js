// The binding (cpp/bindings/embind.cpp, web/src/wasm/core_binding.js): Embind's objects matched by field
// name, error texts that leave the heap as it was, handles that refuse use after delete(), and
// nothing of the hand-written surface it replaced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { CoreMha, coreConfig, resolveMhaConfig } from '../internals.mjs';
import { coreRingGeometry, newCoreCache, requireGroup } from '../../web/src/wasm/core_binding.js';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { MaskKind } from '../../web/src/base/call_plan.js';

const { core, module } = await loadNodeCore(pickVariant());
const config = (options) => coreConfig(resolveMhaConfig({ embedDim: 8, numHeads: 2, ...options }));
const paths = (o, prefix = '') => Object.entries(o).flatMap(([k, v]) =>
  (v !== null && typeof v === 'object' ? paths(v, `${prefix}${k}.`) : [`${prefix}${k}`]));
const without = (o, path) => {
  const [head, ...rest] = path.split('.');
  const { [head]: inner, ...others } = o;
  return rest.length ? { ...others, [head]: without(inner, rest.join('.')) } : others;
};

test('every MhaConfig field coreConfig() writes is one the core reads: without it, configure() names it', () => {
  const written = config({ rotary: { dim: 2 }, qkNorm: {}, softcap: 30, sinks: true });
  assert.equal(new CoreMha(core).configure(written), '', 'the whole config configures');
  for (const path of paths(written)) {
    const mha = new CoreMha(core);
    const field = path.split('.').at(-1);
    assert.throws(() => mha.configure(without(written, path)), (e) => e.message.includes(field), path);
    mha.delete();
  }
});

test('the core\'s enums have the JS spellings: mask kinds, storage types, RoPE scalings', () => {
  for (const [name, value] of Object.entries(MaskKind)) assert.equal(core.MaskKind[name].value, value, name);
  for (const name of ['float32', 'float16', 'bfloat16', 'int8', 'int4']) assert.ok(core.StorageType[name] instanceof core.StorageType, name);
  assert.deepEqual(['none', 'linear', 'llama3'].map((n) => core.RotaryScaling[n].value), [0, 1, 2]);
  const mha = new CoreMha(core);
  assert.throws(() => mha.configure({ ...config(), weightsDtype: 'values' }), { name: 'OptionError', argument: 'weightsDtype' });
  assert.throws(() => mha.configure({ ...config(), weightsDtype: 'int2' }), /weightsDtype: expected one of float32, float16, bfloat16, int8, int4, got int2/);
  mha.delete();
});

test('error texts come back whole, and failing calls leave the heap as it was', () => {
  const mha = new CoreMha(core);
  assert.equal(mha.configure(config()), '');
  // A group's registration allocates once, for good: not a call's leak.
  for (const group of ['sdpa', 'cache', 'inspection', 'heads']) requireGroup(core, group);
  const before = core.memoryInUse();
  for (let i = 0; i < 200; i++) {
    const error = mha.loadParameter(`no_such_entry_${i}`, 0, 1, 'float32');
    assert.match(error, new RegExp(`^StateDictError\\|no_such_entry_${i}\\|`));
  }
  assert.match(mha.configure({ ...config(), embedDim: 0 }), /^ConfigError\|embed_dim\|embed_dim: expected an integer >= 1, got 0$/);
  assert.match(mha.configure({ ...config(), scale: 1e-46 }), /^ConfigError\|scale\|/, 'a scale that is 0 in float32 is refused, not the default');
  const cache = newCoreCache(core);
  assert.match(mha.createCache(cache, 1, 4, 0, 'bfloat16'), /^ConfigError\|dtype\|/);
  cache.delete();
  assert.match(coreRingGeometry(core, 0, 0).error, /^ConfigError\|/);
  assert.match(mha.beginLoadInPlace('nope', 1, 'float32').error, /^StateDictError\|nope\|/);
  assert.match(mha.headBilinearForm(9).error, /^ConfigError\|head\|/);
  assert.equal(core.memoryInUse(), before);
  mha.delete();
});

test('a handle refuses use after delete(), with Embind\'s error', () => {
  const mha = new CoreMha(core);
  const cache = newCoreCache(core);
  assert.equal(cache.length(), 0, 'a cache without storage is empty');
  cache.delete();
  mha.delete();
  assert.ok(mha.isDeleted() && cache.isDeleted());
  assert.throws(() => mha.parameterSpecs(), /deleted/);
  assert.throws(() => cache.delete(), /deleted/);
});

test('the hand-written binding does not come back: no wa_* export, no record protocol', () => {
  const exports = WebAssembly.Module.exports(module).map((e) => e.name);
  assert.deepEqual(exports.filter((n) => /^_?wa_/.test(n)), []);
  assert.ok(!exports.includes('stackAlloc'), 'no stack scratch for records');
  const root = new URL('../../', import.meta.url);
  const sources = (dir) => readdirSync(new URL(dir, root), { recursive: true }).filter((f) => /\.(js|mjs|h|cpp)$/.test(f)).map((f) => `${dir}${f}`);
  const files = [...sources('web/src/'), ...sources('cpp/')];
  const banned = /EMSCRIPTEN_KEEPALIVE|argument_wire|recordFieldNames|withScratch|read_record/;
  assert.deepEqual(files.filter((f) => banned.test(readFileSync(new URL(f, root), 'utf8'))), []);
  // embind_builtin_types.cpp registers Embind's own built-in types (those the binding uses).
  assert.deepEqual(readdirSync(new URL('cpp/bindings/', root)).filter((f) => f.endsWith('.cpp')).sort(),
    ['embind.cpp', 'embind_builtin_types.cpp'], 'one binding file');
});

test('a fresh core registers only the cold-start calls; each other group once, when first needed', async () => {
  const { core: fresh } = await loadNodeCore(pickVariant());
  assert.ok(fresh.Mha && fresh.MhaConfig === undefined, 'the Mha class is there at load');
  for (const name of ['sdpa', 'KvCache', 'mhaReadParameter', 'mhaForwardHeads']) assert.equal(fresh[name], undefined, name);
  assert.ok(newCoreCache(fresh).length() === 0 && fresh.KvCache && fresh.mhaCreateCache && fresh.kvRingGeometry);
  const cacheClass = fresh.KvCache;
  assert.equal(fresh.registerGroup('cache'), 0);  // again: nothing is registered twice
  assert.equal(fresh.KvCache, cacheClass);
  assert.equal(fresh.sdpa, undefined, 'one group does not register another');
  assert.equal(fresh.registerGroup('nope'), 1, 'a name that is no group');
});

test('a failed call returns 1 and leaves its text for takeError(), once; a call that succeeds returns 0', () => {
  const native = new core.Mha();
  const before = core.memoryInUse();
  assert.equal(native.configure({ ...config(), weightsDtype: core.StorageType.float32, rotaryScaling: core.RotaryScaling.none, embedDim: 0 }), 1);
  assert.match(core.takeError(), /^ConfigError\|embed_dim\|/);
  assert.equal(core.takeError(), '', 'taken once');
  assert.equal(core.memoryInUse(), before, 'the text is freed once taken');
  assert.equal(native.configure({ ...config(), weightsDtype: core.StorageType.float32, rotaryScaling: core.RotaryScaling.none }), 0);
  native.delete();
});

// The config's fields are one list per language (issue 36): module_config.js's CONFIG_FIELDS (what
// coreConfig() sends) and the value_object's registration in embind.cpp (configFieldNames()).
test('the config fields JS sends are exactly those the core registers, for every kind of module', () => {
  const registered = JSON.parse(requireGroup(core, 'inspection').configFieldNames());
  for (const options of [{}, { rotary: { scaling: { type: 'llama3', factor: 8 } }, qkNorm: {}, sinks: true, scale: 0.5, softcap: 30 }]) {
    assert.deepEqual(Object.keys(config(options)).sort(), [...registered].sort(), JSON.stringify(options));
  }
  assert.equal(new Set(registered).size, registered.length);
});
