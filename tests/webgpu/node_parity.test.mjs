// Every PyTorch MHA fixture on backend 'webgpu' in Node (Dawn), each checked to have run on the GPU,
// through the test contract's runCase(). Set-up and how to point it at a GPU: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { runCase } from '../contract/contract.mjs';
import { caseFlops, isSoftwareAdapter } from '../internals.mjs';
import { MAX_FIXTURE_FLOPS } from './adapter.mjs';
import { adapter, adapterName, fixtures, gpu, kind, runs } from './node_setup.mjs';

const small = fixtures.filter((c) => caseFlops(c) <= MAX_FIXTURE_FLOPS);
const large = fixtures.filter((c) => caseFlops(c) > MAX_FIXTURE_FLOPS);

describe(`PyTorch parity on WebGPU (Dawn, ${adapterName})`, () => {
  test(`the adapter is what the suite detected (${kind}), the package agrees, and the fixtures fit software WebGPU`, () => {
    if (kind === 'software') {
      assert.equal(adapter.info.architecture, 'swiftshader', 'the software adapter is SwiftShader');
      assert.equal(isSoftwareAdapter(adapter), true, "the package sees a software adapter (which 'auto' leaves alone)");
    } else {
      assert.equal(isSoftwareAdapter(adapter), false, "the package sees a hardware adapter (which 'auto' uses above its threshold)");
    }
    assert.ok(small.length >= 30, `${small.length} MHA fixtures`);
  });

  test(`fixtures over ${MAX_FIXTURE_FLOPS / 1e6} MFLOP left out of software WebGPU: ${large.map((c) => c.name).join(', ') || 'none'}`, () => {
    assert.equal(small.length + large.length, fixtures.length);
  });

  for (const c of small) {
    test(`webgpu parity with PyTorch: mha ${c.name}`, async () => {
      runs.length = 0;
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      assert.equal(r.backend, 'webgpu');
      assert.deepEqual(runs, ['webgpu'], 'the call ran on the GPU');
      assert.ok(r.ok, r.detail);
    });
  }
});
