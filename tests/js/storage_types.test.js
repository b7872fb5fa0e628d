// The storage types are listed once per language (issue 36): web/src/storage/storage_types.js in
// JS, kStorageTypes in cpp/include/webattention/storage_type.h in C++. This reads the core's table
// through the binding (storageTypeTable), and the TypeScript unions from web/types/tensors.d.ts,
// and checks that they say the same; the Embind enum StorageType must carry every name too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';
import { requireGroup } from '../../web/src/wasm/core_binding.js';
import { ACTIVATIONS_DTYPES, CACHE_DTYPES, HALF_DTYPES, STORAGE_TYPES, WEIGHTS_DTYPES } from '../../web/src/storage/storage_types.js';

test('the JS storage-type table equals the core\'s (kStorageTypes), and the enum names them all', async () => {
  const { core } = await loadNodeCore(pickVariant());
  const coreTable = JSON.parse(requireGroup(core, 'inspection').storageTypeTable());
  assert.deepEqual(STORAGE_TYPES.map((t) => ({ ...t })), coreTable);
  const enumNames = Object.keys(core.StorageType).filter((k) => core.StorageType[k] instanceof core.StorageType);
  assert.deepEqual(enumNames.sort(), STORAGE_TYPES.map((t) => t.name).sort());
});

test('the TypeScript unions list the same storage types as the table', () => {
  const types = readFileSync(new URL('../../web/types/tensors.d.ts', import.meta.url), 'utf8');
  const union = (name) => [...types.match(new RegExp(`export type ${name} = ([^;]+);`))[1].matchAll(/'([^']+)'/g)].map((m) => m[1]);
  assert.deepEqual(union('WeightsDtype'), [...WEIGHTS_DTYPES]);
  assert.deepEqual(union('CacheDtype'), [...CACHE_DTYPES]);
  assert.deepEqual(union('HalfDtype'), [...HALF_DTYPES]);
  assert.deepEqual(union('ActivationsDtype'), [...ACTIVATIONS_DTYPES]);
});
