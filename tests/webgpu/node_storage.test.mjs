// 16-, 8- and 4-bit storage on WebGPU. Weights (web/src/webgpu/weight_storage.js; the linear
// kernels read them through weight(n, k): two per u32 by unpack2x16float or a shift, int8 four per
// u32 with their scales, int4 eight per u32 with their scales and zero points): random finite
// MHA configurations per weightsDtype against the float64 reference of the stored weights, and
// every linear variant, pinned, on both load flavours against WASM's module of the same
// weightsDtype. The cache (gpu_kv_cache.js, kernels/cache_narrow.wgsl.js): random decode
// sequences per cache dtype × weightsDtype, on both attention paths, against the reference of the
// stored keys and values. On SwiftShader the two products shrink to their covering subsets
// (onGpuOrCovering): every variant and every dtype, every cache dtype and every weightsDtype.
// Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { randomDecodeCase, randomMhaCase, runCase } from '../contract/contract.mjs';
import { halfStateDict, selectionHooks } from '../internals.mjs';
import { fittingVariants } from '../../web/src/webgpu/programs.js';
import { pairs } from './covering.mjs';
import { adapter, adapterName, gpu, gpuMatchesWasm, onGpuOrCovering, paths, runs } from './node_setup.mjs';

const NARROW = ['float16', 'bfloat16', 'int8', 'int4'];
const BLOCKED = ['int8', 'int4'];  // quantised: no 16-bit tensors kept as given
const COUNT = 16;

for (const weightsDtype of NARROW) {
  test(`${COUNT} random finite configurations with ${weightsDtype} weights on WebGPU (${adapterName}) match the reference`, async () => {
    const failures = [];
    for (let seed = 1; seed <= COUNT; seed++) {
      const c = randomMhaCase(seed, { finite: true, weightsDtype });
      // The module's own kind of 16-bit tensors, kept as given (vectors stay float32).
      if (!BLOCKED.includes(weightsDtype) && seed % 2 === 0) c.stateDict = halfStateDict(c.stateDict, weightsDtype);
      runs.length = 0;
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      if (!r.ok) failures.push(`seed ${seed}: ${r.detail}`);
      else if (runs.join() !== 'webgpu') failures.push(`seed ${seed}: ran on ${runs.join() || 'nothing'}, not the GPU`);
    }
    assert.deepEqual(failures, []);
  });
}

// The variants these calls (70 and 74 rows) of float32 modules may run on this adapter: rows8 (a
// decode step's few rows) reads narrow weights in node_variants.test.mjs, the float16 variants'
// twins in node_half_precision.test.mjs.
const manyRows = fittingVariants('linear', adapter, { rows: 70 }).map((v) => v.name);

describe(`every linear variant reads narrow weights (Dawn, ${adapterName})`, () => {
  const ran = [];
  for (const [name, weightsDtype] of onGpuOrCovering(pairs(manyRows, NARROW))) {
    test(`${name}, ${weightsDtype}: E 132 (vec4 loads of X), kdim 13 / vdim 7 (scalar), out_proj over 70 rows`, async () => {
      api.configure({ gpuKernels: { linear: name } });
      selectionHooks.onCall = (names) => ran.push(names.linear);
      ran.length = 0;
      try {
        await gpuMatchesWasm({ create: { embedDim: 132, numHeads: 4, weightsDtype }, B: 1, L: 70, self: true });
        await gpuMatchesWasm({ create: { embedDim: 40, numHeads: 2, kdim: 13, vdim: 7, weightsDtype }, B: 2, L: 9, S: 37 });
      } finally {
        api.configure({ gpuKernels: {} });
        selectionHooks.onCall = null;
      }
      assert.ok(ran.length > 0 && ran.every((n) => n === name), `the pinned variant ran: ${ran.join()}`);
    });
  }
});

const cacheAndWeights = pairs(['float16', 'int8'], ['float32', 'float16', 'int8', 'int4']);
for (const [cacheDtype, weightsDtype] of onGpuOrCovering(cacheAndWeights)) {
  test(`random decode sequences on WebGPU: ${cacheDtype} cache, ${weightsDtype} weights, against the reference of the stored keys and values`, async () => {
    const failures = [];
    runs.length = 0;
    paths.length = 0;
    for (let seed = 1; seed <= 8; seed++) {
      const c = randomDecodeCase(seed, { weightsDtype, cacheDtype });
      const r = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      if (!r.ok) failures.push(`${c.name}: ${r.detail}`);
    }
    assert.deepEqual(failures, []);
    assert.ok(runs.length > 0 && runs.every((where) => where === 'webgpu'), `ran on ${[...new Set(runs)]}`);
    // Chunks of 1 row take the decode path, longer ones the flash path: both read the cache.
    assert.deepEqual([...new Set(paths)].sort(), ['decode', 'flash']);
  });
}
