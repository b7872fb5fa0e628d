// What a float16 / int8 KV cache and the module's options cost in GPU buffers (issue 18): every
// attention kernel (flash, weights, decode) reads a narrow cache where it is stored, so no call
// makes a buffer the size of the cache's float32 layout (a widened copy); a multi-pass step's
// snapshot takes its copies from the module's buffer pool; a module without sinks or qk-norm has
// no buffers for them. Results equal WASM on the same steps. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention } from '#webattention';
import { filled } from '../contract/random.mjs';
import { DECODE_MAX_L, ringGeometry } from '../internals.mjs';
import { assertClose, freshDevice, randomStateDict, runs } from './node_setup.mjs';

const CREATE = { embedDim: 64, numHeads: 4, numKvHeads: 2 };  // d = 16, G·d = 32
const E = CREATE.embedDim;
const MAX_LENGTH = 4096;
const sd = await (async () => {
  const m = await MultiHeadAttention.create(CREATE);
  const dict = randomStateDict(m.stateDictShapes, 5);
  m.dispose();
  return dict;
})();

/** A fresh device whose buffers are recorded as { size, label } from the moment `since` is set. */
async function recordingDevice() {
  const device = await freshDevice();
  const log = { made: null };
  const createBuffer = device.createBuffer;
  device.createBuffer = function (descriptor) {
    log.made?.push({ size: descriptor.size, label: descriptor.label });
    return createBuffer.call(this, descriptor);
  };
  return { device, log };
}

const tokens = (n, seed) => ({ data: filled(n * E, seed), shape: [1, n, E] });
const devices = [];
after(() => devices.forEach((d) => d.destroy()));

/** fn({ gpuMha, wasm, log }) with a GPU module on a recording device and its WASM twin, loaded alike. */
async function withPair(fn) {
  const { device, log } = await recordingDevice();
  devices.push(device);
  const gpuMha = await MultiHeadAttention.create({ ...CREATE, backend: 'webgpu', gpu: device });
  const wasm = await MultiHeadAttention.create({ ...CREATE, backend: 'wasm' });
  try {
    gpuMha.loadStateDict(sd);
    wasm.loadStateDict(sd);
    await fn({ gpuMha, wasm, log });
  } finally {
    gpuMha.dispose();
    wasm.dispose();
  }
}

describe('GPU buffers of narrow caches and optional parameters', () => {
  for (const dtype of ['float16', 'int8']) {
    test(`${dtype === 'int8' ? 'an' : 'a'} ${dtype} cache of ${MAX_LENGTH} positions: flash, weights and decode calls make no buffer of its float32 size`, () => withPair(async ({ gpuMha, wasm, log }) => {
      const gpuCache = gpuMha.createCache({ maxLength: MAX_LENGTH, dtype });
      const wasmCache = wasm.createCache({ maxLength: MAX_LENGTH, dtype });
      const { capacity } = ringGeometry({ maxLength: MAX_LENGTH, window: 0 });
      // What a widened copy of K (or V) takes: the float32 layout [capacity, G·d].
      const float32Bytes = capacity * gpuMha.config.numKvHeads * gpuMha.config.headDim * 4;
      log.made = [];
      runs.length = 0;
      // A flash call (L > DECODE_MAX_L) and decode steps, with and without the weights.
      const steps = [[tokens(DECODE_MAX_L + 5, 1), true], [tokens(1, 2), true], [tokens(1, 3), false], [tokens(DECODE_MAX_L + 2, 4), false]];
      for (const [x, needWeights] of steps) {
        const got = await gpuMha.forward(x, x, x, { cache: gpuCache, needWeights });
        const want = await wasm.forward(x, x, x, { cache: wasmCache, needWeights });
        assertClose(got.output, want.output, `output of a ${x.shape[1]}-row step`);
        if (needWeights) assertClose(got.attnWeights, want.attnWeights, `weights of a ${x.shape[1]}-row step`);
      }
      assert.ok(runs.length === steps.length && runs.every((where) => where === 'webgpu'), `every step on the GPU: ${runs}`);
      const big = log.made.filter(({ size }) => size >= float32Bytes / 2);
      assert.deepEqual(big, [], `buffers of at least half the float32 cache (${float32Bytes} bytes) made by the calls`);
      assert.ok(log.made.length > 0, 'the recording saw the calls\' buffers');
    }));
  }

  test('a multi-pass step\'s cache snapshot comes from the module\'s buffer pool: a second such step makes no copy', () => withPair(async ({ gpuMha, wasm, log }) => {
    const window = 5;
    const long = 2 * ringGeometry({ maxLength: 0, window }).rowsPerPass + 3;  // three passes
    const gpuCache = gpuMha.createCache({ window, dtype: 'int8' });
    const wasmCache = wasm.createCache({ window, dtype: 'int8' });
    for (const seed of [1, 2]) {
      log.made = [];
      const x = tokens(long, seed);
      assertClose((await gpuMha.forward(x, x, x, { cache: gpuCache })).output,
        (await wasm.forward(x, x, x, { cache: wasmCache })).output, `multi-pass step ${seed}`);
      const snapshots = log.made.filter(({ label }) => /snapshot/.test(label));
      assert.equal(snapshots.length, seed === 1 ? 2 : 0, seed === 1 ? 'the first step makes the K and V copies' : 'the second step reuses them');
    }
  }));

  test('a module without sinks or qk-norm makes no buffers for them; one with them does', async () => {
    const { device, log } = await recordingDevice();
    devices.push(device);
    const optional = /sinks|q_norm|k_norm/;
    log.made = [];
    const plain = await MultiHeadAttention.create({ ...CREATE, backend: 'webgpu', gpu: device });
    plain.dispose();
    assert.deepEqual(log.made.filter(({ label }) => optional.test(label)), []);
    log.made = [];
    const both = await MultiHeadAttention.create({ ...CREATE, sinks: true, qkNorm: {}, backend: 'webgpu', gpu: device });
    both.dispose();
    assert.deepEqual(log.made.filter(({ label }) => optional.test(label)).map(({ label }) => label).sort(),
      ['webattention k_norm.weight', 'webattention q_norm.weight', 'webattention sinks weights']);
  });
});
