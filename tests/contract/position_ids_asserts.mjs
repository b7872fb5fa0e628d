// The assertions of position_ids.mjs's runs, for the Node suites (node:assert): one set for every
// backend, the WASM modules and the pool (tests/js/position_ids.test.js) and WebGPU
// (tests/webgpu/node_position_ids.test.mjs). `create` goes to create() ({ backend, gpu, ... }).
import assert from 'node:assert/strict';
import { compare } from './compare.mjs';
import { defaultIdsPairs, hostileIdsRun, misplacedIdsRun } from './position_ids.mjs';

const bits = (a) => new Uint32Array(a.buffer, a.byteOffset, a.length);

export async function assertDefaultIdsChangeNothing(api, create) {
  for (const pair of await defaultIdsPairs(api, create)) {
    assert.equal(pair.with.length, pair.without.length, pair.what);
    assert.deepEqual(bits(pair.with), bits(pair.without), `${pair.what}: explicit default ids changed bits`);
  }
}

// Each refusal: the expected class, naming positionIds (what a caller wrote).
function assertRefusals(refused) {
  for (const { what, expected, got } of refused) {
    assert.ok(got, `${what}: accepted`);
    assert.equal(got.name, expected, `${what}: ${got.message}`);
    assert.equal(got.argument, 'positionIds', `${what}: ${got.message}`);
    assert.match(got.message, /^positionIds/, what);
  }
}

export async function assertHostileIdsRefused(api, create) {
  const run = await hostileIdsRun(api, create);
  assertRefusals(run.refused);
  const prompt = run.lengths[0];
  assert.ok(prompt > 0 && run.lengths.every((n) => n === prompt), `cache lengths after the refusals: ${run.lengths}`);
  for (const part of ['key', 'value']) assert.deepEqual(run.readAfter[part], run.readBefore[part], `cache ${part}s after the refusals`);
  const { ok, detail } = compare(run.next, run.fresh);
  assert.ok(ok, `the next call after the refusals: ${detail}`);
}

export async function assertMisplacedIdsRefused(api, create) {
  assertRefusals(await misplacedIdsRun(api, create));
}
