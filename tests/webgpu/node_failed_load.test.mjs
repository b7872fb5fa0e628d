// A refused loadStateDict() changes nothing on WebGPU (tests/contract/failed_load.mjs, as
// tests/js/failed_load.test.js runs it on WASM and the pool): per weightsDtype (int8 packed on
// the GPU side, weight_storage.js), a state dict whose last entry is bad is a typed error naming
// that key, refused before the GPU's buffers or the WASM core it wraps are touched, and every
// forward stays, on the GPU, bit for bit what the earlier weights gave. Set-up: node_setup.mjs.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { WEIGHTS_DTYPES, assertFailedLoadsChangeNothing } from '../contract/failed_load.mjs';
import { gpu, pinDefaultsWhereSelecting, runs } from './node_setup.mjs';

// Calls compared bit for bit run the same kernels (pinned where the GPU selects by measurement).
after(pinDefaultsWhereSelecting().undo);

for (const weightsDtype of WEIGHTS_DTYPES) {
  test(`${weightsDtype} weights on WebGPU: a refused state dict leaves the module's outputs as its earlier weights gave them`, async () => {
    runs.length = 0;
    assert.ok(await assertFailedLoadsChangeNothing(api, weightsDtype, { backend: 'webgpu', gpu }) >= 4);
    assert.ok(runs.length > 0 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
  });
}
