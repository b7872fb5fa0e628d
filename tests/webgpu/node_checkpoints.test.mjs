// The checkpoint cases of tests/fixtures/checkpoints/ (loadStateDict({ layout }), bias per
// projection, scale, softcap; float64 truth) on the WebGPU backend: plain, causal and cached
// forwards, the cached ones on the decode path. Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as api from 'webattention';
import { runCheckpointCase } from '../contract/run_checkpoint.mjs';
import { gpu, paths, runs } from './node_setup.mjs';

const dir = new URL('../fixtures/checkpoints/', import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL('checkpoints.json', dir), 'utf8'));

for (const c of cases) {
  test(`${c.name} (layout '${c.load.layout}') on WebGPU: plain, causal and cached forwards`, async () => {
    runs.length = 0;
    paths.length = 0;
    const result = await runCheckpointCase(api, c, readFileSync(new URL(c.file, dir)), { create: { backend: 'webgpu', gpu } });
    for (const pass of ['full', 'causal', 'cached']) assert.ok(result[pass].ok, `${pass}: ${result[pass].detail}`);
    assert.ok(runs.length >= 5 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
    assert.ok(paths.includes('flash') && paths.includes('decode'), `both attention paths ran: ${paths}`);
  });
}
