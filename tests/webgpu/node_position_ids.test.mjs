// forward()'s positionIds on the WebGPU backend (the rotary kernel reads a table row per (batch,
// row)): the contract of tests/contract/position_ids.mjs, as the WASM modules and the pool run it
// (tests/js/position_ids.test.js); the checkpoint fixtures with ids (float64 truth) run in
// node_checkpoints.test.mjs. Set-up: node_setup.mjs.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { assertDefaultIdsChangeNothing, assertHostileIdsRefused, assertMisplacedIdsRefused } from '../contract/position_ids_asserts.mjs';
import { gpu, paths, pinDefaultsWhereSelecting, runs } from './node_setup.mjs';

// Calls compared bit for bit run the same kernels (pinned where the GPU selects by measurement).
after(pinDefaultsWhereSelecting().undo);

const onGpu = { backend: 'webgpu', gpu };

test('positionIds equal to the rows\' own positions give the same bits as none on WebGPU: plain (flash), cached (decode, a wrapped window), cache.read()', async () => {
  runs.length = 0;
  paths.length = 0;
  await assertDefaultIdsChangeNothing(api, onGpu);
  assert.ok(runs.length >= 8 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
  assert.ok(paths.includes('flash') && paths.includes('decode'), `both attention paths ran: ${paths}`);
});

test('hostile positionIds on WebGPU are typed errors naming positionIds; the GPU cache keeps its length and rows, the next call works', () =>
  assertHostileIdsRefused(api, onGpu));

test('positionIds without rotary, or with S != L and no cache, on WebGPU are typed errors naming positionIds', () =>
  assertMisplacedIdsRefused(api, onGpu));
