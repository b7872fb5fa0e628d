// The checkpoint cases of tests/fixtures/checkpoints/ (loadStateDict({ layout }), bias per
// projection, scale, softcap; float64 truth) on the WebGPU backend: plain, causal and cached
// forwards, the cached ones on the decode path, and cache.read(). Set-up: node_setup.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as api from '#webattention';
import { compare } from '../contract/compare.mjs';
import { WINDOW_CASE, lastPositions, readNarrowAndFloat32, readWindowAndWhole } from '../contract/cache_read.mjs';
import { runCheckpointCase } from '../contract/run_checkpoint.mjs';
import { gpu, gpuMatchesWasm, paths, runs } from './node_setup.mjs';

const dir = new URL('../fixtures/checkpoints/', import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL('checkpoints.json', dir), 'utf8'));

for (const c of cases) {
  test(`${c.name} (layout '${c.load.layout}') on WebGPU: plain, causal and cached forwards, cache.read()`, async () => {
    runs.length = 0;
    paths.length = 0;
    const result = await runCheckpointCase(api, c, readFileSync(new URL(c.file, dir)), { create: { backend: 'webgpu', gpu } });
    for (const pass of ['full', 'causal', 'cached', 'cacheKey', 'cacheValue']) assert.ok(result[pass].ok, `${pass}: ${result[pass].detail}`);
    assert.ok(runs.length >= 5 && runs.every((where) => where === 'webgpu'), `every call on the GPU: ${runs}`);
    assert.ok(paths.includes('flash') && paths.includes('decode'), `both attention paths ran: ${paths}`);
  });
}

test('cache.read() of a wrapped window ring on WebGPU: the last `window` positions, as WASM reads them', async () => {
  const gpuRead = await readWindowAndWhole(api, { backend: 'webgpu', gpu });
  const wasmRead = await readWindowAndWhole(api, { backend: 'wasm' });
  const { T, window } = WINDOW_CASE;
  assert.equal(gpuRead.windowed.firstPosition, T - window);
  for (const part of ['key', 'value']) {
    const { ok, detail } = compare(gpuRead.windowed[part], wasmRead.windowed[part]);
    assert.ok(ok, `${part}: ${detail}`);
    assert.deepEqual(gpuRead.windowed[part].data, lastPositions(gpuRead.whole[part], T - window).data, part);
  }
});

for (const dtype of ['float16', 'int8']) {
  test(`cache.read() of a ${dtype} cache on WebGPU: the float32 cache's rows as ${dtype} stores them`, async () => {
    const { float32, narrow, expected } = await readNarrowAndFloat32(api, dtype, { backend: 'webgpu', gpu });
    for (const part of ['key', 'value']) {
      if (dtype === 'float16') {
        assert.deepEqual(narrow[part].data, expected[part].data, part);
        continue;
      }
      // WGSL's division is within 2.5 ulp (docs/webgpu.md): a quotient that close to a tie may
      // round to the neighbouring integer, one quantum (the row's scale) away, never more.
      const d = float32[part].shape[3];
      const got = narrow[part].data, want = expected[part].data, f32 = float32[part].data;
      for (let row = 0; row < got.length; row += d) {
        const quantum = Math.max(...f32.subarray(row, row + d).map(Math.abs)) / 127;
        for (let c = row; c < row + d; c++) {
          assert.ok(Math.abs(got[c] - want[c]) <= quantum * (1 + 1e-6), `${part}[${c}]: ${got[c]} vs ${want[c]} (quantum ${quantum})`);
        }
      }
    }
  });
}

test('sinks on WebGPU as on WASM, flash and decode paths, with a batch whose every key is masked', async () => {
  const S = 40;
  const padding = new Uint8Array(2 * S).fill(1, 0, S);  // batch 0: no allowed key (the sink takes it all)
  const options = { keyPaddingMask: { data: padding, shape: [2, S] }, needWeights: true, averageAttnWeights: false };
  await gpuMatchesWasm({ create: { embedDim: 32, numHeads: 4, numKvHeads: 2, sinks: true }, B: 2, L: 9, S, path: 'flash', options });
  await gpuMatchesWasm({ create: { embedDim: 32, numHeads: 4, sinks: true, softcap: 1.5 }, B: 2, L: 1, S, path: 'decode', options });
});

test('qkNorm before RoPE on WebGPU as on WASM: fused self-attention on flash, cross-attention on decode', async () => {
  await gpuMatchesWasm({ create: { embedDim: 32, numHeads: 4, numKvHeads: 2, qkNorm: {}, rotary: { dim: 4 } }, B: 2, L: 20, self: true, path: 'flash',
    options: { isCausal: true, needWeights: true } });
  await gpuMatchesWasm({ create: { embedDim: 16, numHeads: 2, kdim: 12, qkNorm: { eps: 1e-3 }, rotary: { interleaved: true } }, B: 1, L: 2, S: 70,
    path: 'decode', options: { needWeights: true } });
});
