// Grouped-query attention and rotary embeddings on WebGPU vs WASM in Node, on what the fixtures
// do not reach: both attention paths (flash across tiles, decode over several key chunks), the
// fused Q/K/V and K/V projections with fewer K/V heads, per-head weights read through the shared
// K/V head, partial and full rotary dims in both layouts. And the cos/sin table's precision at a
// large position (formed in float64), and the RoPE decoding fixtures (scaled ones included).
// Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { runCase } from '../contract/contract.mjs';
import { loadFixtures } from '../js/fixtures.js';
import { consecutivePositions, consecutiveTable, rotaryTable } from '../../web/src/webgpu/rotary_table.js';
import { assertClose, boolMask, gpu, gpuMatchesWasm, randomStateDict } from './node_setup.mjs';
import { filled } from '../contract/random.mjs';
import { passHooks } from '../internals.mjs';

describe('WebGPU vs WASM: grouped-query attention and rotary embeddings', () => {
  test('GQA (8 heads, 2 K/V heads), causal self-attention across flash tiles, fused Q/K/V, rotary half-split', () => gpuMatchesWasm({
    create: { embedDim: 32, numHeads: 8, numKvHeads: 2, rotary: {} }, B: 2, L: 70, S: 70, self: true, path: 'flash',
    options: { isCausal: true, needWeights: true, averageAttnWeights: false },
  }));

  test('MQA on the decode path over 2 key chunks, key === value (fused K/V), interleaved partial rotary, padding', () => gpuMatchesWasm({
    create: { embedDim: 24, numHeads: 3, numKvHeads: 1, headDim: 8, rotary: { dim: 6, interleaved: true, base: 500 } },
    B: 2, L: 3, S: 300, kvSame: true, path: 'decode',
    options: { keyPaddingMask: { data: boolMask(2 * 300, 7), shape: [2, 300] }, needWeights: true, averageAttnWeights: false },
  }));

  test('GQA cross-attention with free dims on flash, rotary without GQA on decode', async () => {
    await gpuMatchesWasm({
      create: { embedDim: 12, numHeads: 6, numKvHeads: 3, kdim: 10, vdim: 7, headDim: 4, valueHeadDim: 6, rotary: { dim: 2 } },
      B: 1, L: 9, S: 40, path: 'flash', options: { needWeights: true },
    });
    await gpuMatchesWasm({
      create: { embedDim: 16, numHeads: 2, rotary: { interleaved: true } }, B: 1, L: 1, S: 260, path: 'decode',
      options: { needWeights: true },
    });
  });

  test('the rotary table holds cos and sin of a float64 angle, also at position 100000', () => {
    const rotary = { base: 500, dim: 8 };
    const first = 100000;
    const table = rotaryTable(rotary, consecutivePositions(first, 3));
    for (let i = 0; i < 3; i++) {
      for (let j = 0; j < 4; j++) {
        const angle = (first + i) * 500 ** (-2 * j / 8);
        assert.equal(table[(i * 4 + j) * 2], Math.fround(Math.cos(angle)));
        assert.equal(table[(i * 4 + j) * 2 + 1], Math.fround(Math.sin(angle)));
      }
    }
    // Why on the CPU in float64: an f32 angle is off by ~5e-4 in cos there already.
    const f32Angle = Math.fround(Math.fround(first) * Math.fround(500 ** (-2 / 8)));
    assert.ok(Math.abs(Math.cos(f32Angle) - table[2]) > 1e-4);
  });

  test('a step\'s table is formed once for options of the same values and the same rows, anew for other values or rows', () => {
    const formed = (rotary, first, count) => rotaryTable(rotary, consecutivePositions(first, count));
    const layer = (base) => ({ base, dim: 8, interleaved: false, scaling: null, table: null });
    const [a, b, other] = [layer(500), layer(500), layer(600)];
    const first = consecutiveTable(a, 7, 1);
    assert.deepEqual(first, formed(a, 7, 1));
    assert.equal(consecutiveTable(b, 7, 1), first, 'another layer of the same values: the same table');
    assert.deepEqual(consecutiveTable(other, 7, 1), formed(other, 7, 1), 'another base: its own');
    assert.notDeepEqual(formed(other, 7, 1), first);
    assert.deepEqual(consecutiveTable(a, 8, 1), formed(a, 8, 1), 'the next position: formed anew');
    assert.deepEqual(consecutiveTable(b, 8, 2), formed(a, 8, 2), 'more rows: formed anew');
    const given = (v) => ({ base: null, dim: 2, interleaved: false, scaling: null,
      table: { cos: Float32Array.of(v, v + 1), sin: Float32Array.of(-v, -v - 1), positions: 2 } });
    const [t1, t2] = [given(0.25), given(0.5)];
    assert.deepEqual([...consecutiveTable(t1, 1, 1)], [1.25, -1.25]);
    assert.deepEqual([...consecutiveTable(t2, 1, 1)], [1.5, -1.5], 'a given table: its own rows, whatever the values');
  });

  // The PyTorch-side decoding fixtures with RoPE (Llama 3 and linear scaling past the trained
  // context, and a given table, among them) through a KV cache on the GPU: Node's parity suite runs the 'mha' ones.
  for (const c of loadFixtures().filter((f) => f.kind === 'decode' && f.create.rotary)) {
    const { table, ...rotary } = c.create.rotary;  // a table by its shape only
    test(`decode fixture ${c.name} on WebGPU (rotary ${JSON.stringify(table ? { ...rotary, table: table.cos.shape } : rotary)})`, async () => {
      const result = await runCase(api, c, { create: { backend: 'webgpu', gpu } });
      assert.ok(result.ok, result.detail);
      assert.equal(result.backend, 'webgpu');
    });
  }
});

// A cached step whose query, key and value are one array (one Q/K/V projection) is normed (qk-norm)
// and rotated by its cache append, in the workgroup of each new row (cache_append.wgsl.js with
// `prepare`), not by dispatches of their own; a step whose key is another array keeps the qk-norm
// and rotary kernels. Each step of each case against WASM on a WASM cache: prefill (flash) and
// single rows (decode), both layouts, partial dims, positionIds, every cache dtype.
test('a cached Q/K/V step norms and rotates in its append, as WASM does; a key of its own keeps their dispatches', async () => {
  const kernels = [];
  passHooks.onDispatches = (dispatches) => kernels.push(...dispatches.map((d) => d.kernel.replace('webattention ', '')));
  const x = (seed, L, E, B = 2) => ({ data: filled(B * L * E, seed), shape: [B, L, E] });
  const ids = (first, L) => ({ data: Int32Array.from({ length: 2 * L }, (_, at) => first + (at % L) * 2 + Math.floor(at / L)), shape: [2, L] });
  const own = (k) => k.startsWith('rotary') || k.startsWith('qkNorm');  // the steps' own kernels
  const cases = [
    [{ embedDim: 32, numHeads: 4, numKvHeads: 2, rotary: {} }, 'float32', false, 'rope'],
    [{ embedDim: 24, numHeads: 3, numKvHeads: 1, headDim: 8, rotary: { dim: 6, interleaved: true, base: 500 } }, 'int8', false, 'rope'],
    [{ embedDim: 16, numHeads: 2, rotary: { dim: 4 } }, 'float16', true, 'rope'],
    [{ embedDim: 32, numHeads: 4, numKvHeads: 2, qkNorm: { eps: 1e-3 }, rotary: { dim: 4 } }, 'float32', false, 'norm+rope'],
    [{ embedDim: 16, numHeads: 2, qkNorm: {} }, 'int8', false, 'norm'],
  ];
  try {
    for (const [create, dtype, withIds, prepare] of cases) {
      const E = create.embedDim;
      const what = `${JSON.stringify(create)} ${dtype}`;
      const modules = [await api.MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu }), await api.MultiHeadAttention.create(create)];
      const sd = randomStateDict(modules[0].stateDictShapes, 3);
      const caches = modules.map((m) => { m.loadStateDict(sd); return m.createCache({ maxLength: 32, dtype, batchSize: 2 }); });
      const steps = [[x(1, 5, E), 0], [x(2, 1, E), 5], [x(3, 1, E), 6], [x(4, 2, E), 7]];
      for (const [input, first] of steps) {
        const L = input.shape[1];
        const options = (i) => ({ cache: caches[i], ...(withIds ? { positionIds: ids(first, L) } : {}) });
        kernels.length = 0;
        const [onGpu, onWasm] = await Promise.all(modules.map((m, i) => m.forward(input, input, input, options(i))));
        assertClose(onGpu.output, onWasm.output, `${what}, rows ${first}…`);
        assert.ok(!kernels.some(own) && kernels.some((k) => k.startsWith('cacheAppend') && k.endsWith(`:${prepare}`)), `${what}: kernels ${kernels}`);
      }
      // Key and value another array than the query: Q and K of two projections, the steps' own kernels.
      kernels.length = 0;
      const [key, query] = [x(5, 1, E), x(6, 1, E)];
      const [onGpu, onWasm] = await Promise.all(modules.map((m, i) => m.forward(query, key, key, { cache: caches[i] })));
      assertClose(onGpu.output, onWasm.output, `${what}: a key of its own`);
      assert.ok(kernels.some(own) && !kernels.some((k) => k.endsWith(`:${prepare}`)), `${what}: kernels ${kernels}`);
      modules.forEach((m) => m.dispose());
    }
  } finally {
    passHooks.onDispatches = null;
  }
});
