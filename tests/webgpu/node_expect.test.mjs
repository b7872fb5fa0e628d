// create({ expect: { L, S, batchSize } }): the expected calls' GPU buffers (pooled, staging,
// uniforms, readback) and pipelines are made at create(), so that the first such call creates no
// buffer (device.createBuffer counted through a wrapper); a call of other shapes still makes
// its own; results are the float64 reference's; `expect` is checked (OptionError naming it, and
// only with a backend that may use the GPU). Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, OptionError } from '#webattention';
import { transferModes } from '../../web/src/webgpu/staging_uploads.js';
import { filled, mhaReference } from '../contract/contract.mjs';
import { adapterName, assertClose, freshDevice, randomStateDict } from './node_setup.mjs';

after(() => Object.assign(transferModes, { staging: 'auto' }));

// A device whose createBuffer() calls are counted.
async function countedDevice() {
  const device = await freshDevice();
  const createBuffer = device.createBuffer.bind(device);
  const counter = { count: 0 };
  device.createBuffer = (descriptor) => {
    counter.count++;
    return createBuffer(descriptor);
  };
  return { device, counter };
}

const E = 32;
const tensor = (B, rows, seed) => ({ data: filled(B * rows * E, seed), shape: [B, rows, E] });

// Creates a module on a counted device, loads it, then runs `calls` ([query, key, value] each):
// returns the buffers each call created, every result checked against the float64 reference.
async function buffersPerCall(options, calls) {
  const { device, counter } = await countedDevice();
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, gpu: device, backend: 'webgpu', ...options });
  try {
    const sd = randomStateDict(mha.stateDictShapes, 5);
    mha.loadStateDict(sd);
    assert.equal(mha.backend, 'webgpu');
    const made = [];
    for (const [q, k, v] of calls) {
      counter.count = 0;
      const r = await mha.forward(q, k, v);
      made.push(counter.count);
      assertClose(r.output, { data: mhaReference(mha.config, sd, q, k, v).output, shape: q.shape }, 'output');
    }
    return made;
  } finally {
    mha.dispose();
    device.destroy();
  }
}

describe(`create({ expect }) on WebGPU (Dawn, ${adapterName})`, () => {
  test('self-attention: the first call of the expected shapes creates no buffer (without expect it does)', async () => {
    transferModes.staging = true;  // the inputs go up through staging buffers: those are made ahead too
    const x = tensor(2, 100, 1);
    const y = tensor(2, 100, 2);
    const [first, second] = await buffersPerCall({ expect: { L: 100, batchSize: 2 } }, [[x, x, x], [y, y, y]]);
    assert.equal(first, 0, 'the first call made buffers');
    assert.equal(second, 0);
    const [without] = await buffersPerCall({}, [[x, x, x]]);
    assert.ok(without > 0, 'without expect the first call makes its buffers');
    transferModes.staging = 'auto';
  });

  test('cross-attention (S != L: key and value one array) and the decode path (L <= 4)', async () => {
    const q = tensor(1, 64, 3);
    const kv = tensor(1, 40, 4);
    assert.deepEqual(await buffersPerCall({ expect: { L: 64, S: 40 } }, [[q, kv, kv]]), [0]);
    const step = tensor(3, 1, 5);
    const memory = tensor(3, 300, 6);
    assert.deepEqual(await buffersPerCall({ expect: { L: 1, S: 300, batchSize: 3 } }, [[step, memory, memory]]), [0]);
  });

  test('a larger call than expected still makes the buffers it needs', async () => {
    const small = tensor(1, 16, 7);
    const large = tensor(1, 200, 8);
    const [first, second] = await buffersPerCall({ expect: { L: 16 } }, [[small, small, small], [large, large, large]]);
    assert.equal(first, 0);
    assert.ok(second > 0);
  });

  test("'auto' asks for its GPU at create() where the expected call would run there", async () => {
    const { device } = await countedDevice();
    const auto = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, gpu: device, webgpuMinFlops: 0, expect: { L: 8 } });
    assert.equal(auto.backend, 'webgpu', 'the GPU is in use before any call');
    auto.dispose();
    const high = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, gpu: device, webgpuMinFlops: 1e15, expect: { L: 8 } });
    assert.equal(high.backend, 'wasm', 'a call under the threshold runs on WASM: nothing asked for');
    high.dispose();
    device.destroy();
  });

  test('expect is checked: OptionError naming it', async () => {
    const refused = async (options, argument) => assert.rejects(
      MultiHeadAttention.create({ embedDim: E, numHeads: 4, ...options }),
      (e) => e instanceof OptionError && e.argument === argument && e.message.includes(argument), argument);
    await refused({ backend: 'wasm', expect: { L: 8 } }, 'expect');
    await refused({ backend: 'auto', expect: 'L=8' }, 'expect');
    await refused({ backend: 'auto', expect: {} }, 'expect.L');
    await refused({ backend: 'auto', expect: { L: 0 } }, 'expect.L');
    await refused({ backend: 'auto', expect: { L: 8, S: 1.5 } }, 'expect.S');
    await refused({ backend: 'auto', expect: { L: 8, batchSize: -1 } }, 'expect.batchSize');
    await refused({ backend: 'auto', expect: { L: 8, rows: 3 } }, 'rows');
    const revoked = Proxy.revocable({ L: 8 }, {});
    revoked.revoke();
    for (const expect of [null, new Map([['L', 8]]), revoked.proxy]) await refused({ backend: 'auto', expect }, 'expect');
  });
});
