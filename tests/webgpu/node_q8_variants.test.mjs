// The q8linear family (int8-activation projections): the tiled variants q8r64x64 and q8r128x128
// (kernels/q8_tiled.wgsl.js), the few-rows variant q8split8 (kernels/q8_split.wgsl.js) and the
// default q8tile16 (kernels/q8_linear.wgsl.js), each dispatched
// alone on random codes against the contract computed here (docs/attention-math/storage.md §11: per block
// the exact integer Σ (q_w − z)·q_x, then acc = acc + (s_w·d_x)·f32(dot) and y = acc + bias, each
// an f32 operation): bit for bit on SwiftShader, the contract's tolerance on a GPU (which may fuse).
// Odd sizes: 1 to 200 rows (one and several 64-row tiles, ragged), N not a multiple of the tile, K
// below a block and not a multiple of 32, weights and scales at offsets (a row starting inside a
// word), Y at an offset and stride (cells outside Y untouched), rows with d = 0, d Inf and d NaN
// (their outputs NaN); int8 and int4 weights, dot4I8Packed and the i32 loop. Through a module, the
// tiled variant pinned gives WASM's bits on calls of 5 to 140 rows (projections of 1 row among
// them), the split one on calls of 1 to 4; the tiled variant is a candidate for calls of more
// than DECODE_MAX_L rows and no fewer, the split one for no more, and the
// selection measures it, checks it on the device and keeps it where it is fastest. Set-up:
// node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MultiHeadAttention, configure } from '#webattention';
import { randomTensor, rng } from '../contract/contract.mjs';
import { selectionHooks } from '../internals.mjs';
import { DECODE_MAX_L } from '../../web/src/webgpu/selection/kernel_config.js';
import { Usage } from '../../web/src/webgpu/device.js';
import { packParams } from '../../web/src/webgpu/kernel_params.js';
import { LINEAR_PARAMS } from '../../web/src/webgpu/kernels/linear_common.wgsl.js';
import { Q8_ROWS_PARAMS } from '../../web/src/webgpu/kernels/q8_rows.wgsl.js';
import { VARIANTS, fittingVariants } from '../../web/src/webgpu/programs.js';
import { adapter, assertSame, createGpu, device, gpu, kind } from './node_setup.mjs';

const BLOCK = 32;
const SENTINEL = 12345.5;  // Y's buffer before the kernel: cells that are not Y's keep it
const f32 = Math.fround;
const DOTS = gpu.wgslLanguageFeatures?.has('packed_4x8_integer_dot_product') ? ['dot4', 'loop'] : ['loop'];

// A random problem { M, N, K, wOff, sOff, bOff, yOff, yStride } and its buffers' contents.
function problemData({ M, N, K, weights, seed }) {
  const next = rng(seed);
  const int = (lo, hi) => lo + Math.floor((next() + 0.5) * (hi - lo + 1));  // next() is in [-0.5, 0.5)
  const blocks = Math.ceil(K / BLOCK);
  const wOff = int(0, 9), sOff = int(0, 5), bOff = int(0, 3), yOff = int(0, 7), yStride = N + int(0, 3);
  const perWord = weights === 'int4' ? 8 : 4;
  const codes = Int32Array.from({ length: wOff + N * K + perWord }, () => (weights === 'int4' ? int(0, 15) : int(-127, 127)));
  const w = new Uint32Array(Math.ceil(codes.length / perWord) + 1);
  codes.forEach((c, i) => { w[Math.floor(i / perWord)] |= (weights === 'int4' ? c : c & 0xff) << ((i % perWord) * (32 / perWord)); });
  const zeroCodes = Int32Array.from({ length: sOff + N * blocks }, () => int(0, 15));
  const zeros = new Uint32Array(Math.ceil(zeroCodes.length / 8) + 1);
  zeroCodes.forEach((z, i) => { zeros[i >> 3] |= z << (4 * (i % 8)); });
  const scales = Float32Array.from({ length: sOff + N * blocks }, () => f32((1 + next()) / 200));
  const x = Int32Array.from({ length: M * blocks * BLOCK }, (_, i) => ((i % (blocks * BLOCK)) < K ? int(-127, 127) : 0));
  const xq = new Uint32Array(x.length / 4);
  x.forEach((c, i) => { xq[i >> 2] |= (c & 0xff) << (8 * (i % 4)); });
  const xd = Float32Array.from({ length: M * blocks }, () => f32((1 + next()) / 100));
  if (M > 1) xd.fill(0, blocks, 2 * blocks);  // row 1: all zero (d 0)
  // Rows 2 and 3: a non-finite block (q8_rows gives NaN; an infinity, which products alone would
  // carry to ±Inf, shows that the kernel tests d's bits).
  if (M > 2) xd[2 * blocks + blocks - 1] = Infinity;
  if (M > 3) xd[3 * blocks] = NaN;
  const bias = Float32Array.from({ length: bOff + N }, () => f32(next()));
  return { M, N, K, blocks, wOff, sOff, bOff, yOff, yStride, codes, w, zeroCodes, zeros, scales, x, xq, xd, bias };
}

// The contract's outputs in Y's buffer layout (NaN where a row's d is), and which cells are Y's.
function expected(d, weights) {
  const y = new Float32Array(d.yOff + d.M * d.yStride + 4).fill(SENTINEL);
  for (let m = 0; m < d.M; m++) {
    for (let n = 0; n < d.N; n++) {
      let acc = 0, nonFinite = false;
      for (let b = 0; b < d.blocks; b++) {
        const sb = d.sOff + n * d.blocks + b;
        const z = weights === 'int4' ? d.zeroCodes[sb] : 0;
        let sum = 0;
        for (let k = b * BLOCK; k < Math.min(d.K, (b + 1) * BLOCK); k++) sum += (d.codes[d.wOff + n * d.K + k] - z) * d.x[m * d.blocks * BLOCK + k];
        const dx = d.xd[m * d.blocks + b];
        nonFinite ||= !Number.isFinite(dx);
        acc = f32(acc + f32(f32(d.scales[sb] * dx) * sum));
      }
      y[d.yOff + m * d.yStride + n] = nonFinite ? NaN : f32(acc + d.bias[d.bOff + n]);
    }
  }
  return y;
}

// Runs WGSL `code` on `on` (a GPUDevice) over `grid` with bindings `data` (typed arrays; the first
// a uniform block); returns binding `out`'s contents after the dispatch, as bytes.
async function runKernel(on, code, grid, data, out) {
  const pipeline = await on.createComputePipelineAsync({ layout: 'auto', compute: { module: on.createShaderModule({ code }), entryPoint: 'main' } });
  const buffers = data.map((values, i) => {
    const usage = (i === 0 ? Usage.UNIFORM : Usage.STORAGE) | Usage.COPY_DST | Usage.COPY_SRC;
    const b = on.createBuffer({ size: Math.max(16, Math.ceil(values.byteLength / 16) * 16), usage });
    on.queue.writeBuffer(b, 0, values);
    return b;
  });
  const readback = on.createBuffer({ size: buffers[out].size, usage: Usage.MAP_READ | Usage.COPY_DST });
  try {
    const encoder = on.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, on.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: buffers.map((b, binding) => ({ binding, resource: { buffer: b } })) }));
    pass.dispatchWorkgroups(...grid);
    pass.end();
    encoder.copyBufferToBuffer(buffers[out], 0, readback, 0, readback.size);
    on.queue.submit([encoder.finish()]);
    await readback.mapAsync(Usage.MAP_READ);
    return new Uint8Array(readback.getMappedRange().slice(0, data[out].byteLength));
  } finally {
    [...buffers, readback].forEach((b) => b.destroy());
  }
}

// Runs q8linear `variant` on `d`; returns Y's buffer as f32 (cells outside Y keep SENTINEL).
async function dispatch(variant, d, weights, dot) {
  const yInit = new Float32Array(d.yOff + d.M * d.yStride + 4).fill(SENTINEL);  // 4 past Y: untouched
  const params = packParams(LINEAR_PARAMS, { M: d.M, N: d.N, K: d.K, xOff: 0, xStride: 0, wOff: d.wOff, bOff: d.bOff, yOff: d.yOff, yStride: d.yStride, sOff: d.sOff });
  const data = [params, d.xq, d.w, d.bias, yInit, d.xd, d.scales, ...weights === 'int4' ? [d.zeros] : []];
  const bytes = await runKernel(device, variant.shader({ dtype: weights, dot }), variant.grid({ M: d.M, N: d.N }), data, 4);
  return new Float32Array(bytes.buffer);
}

// Every cell: Y's the contract's (bits, or the tolerance on a GPU), the others SENTINEL still.
function assertMatches(actual, want, what) {
  assert.equal(actual.length, want.length);
  for (let i = 0; i < actual.length; i++) {
    const e = want[i];
    const ok = kind === 'hardware' ? Object.is(actual[i], e) || Math.abs(actual[i] - e) <= 1e-4 + 1e-4 * Math.abs(e) : Object.is(actual[i], e);
    assert.ok(ok, `${what}: [${i}] the kernel gives ${actual[i]}, the contract ${e}`);
  }
}

// [M, N, K]: one row; a row per tile edge; ragged tiles; several tiles both ways; K < one block.
const SIZES = [[1, 1, 1], [1, 70, 33], [3, 5, 31], [7, 64, 64], [65, 129, 100], [130, 97, 250], [200, 3, 8]];

for (const name of Object.keys(VARIANTS.q8linear)) {
  for (const weights of ['int8', 'int4']) {
    for (const dot of DOTS) {
      test(`${name}, ${weights} weights, ${dot}: the contract's bits at odd sizes, offsets and strides, d 0, Inf and NaN rows`, async () => {
        for (const [M, N, K] of SIZES) {
          const d = problemData({ M, N, K, weights, seed: M * 1000 + N * 10 + K });
          const actual = await dispatch(VARIANTS.q8linear[name], d, weights, dot);
          assertMatches(actual, expected(d, weights), `M ${M} N ${N} K ${K}`);
        }
      });
    }
  }
}

const TILED = 'q8r64x64';
const SPLIT = 'q8split8';
const SG = 'sg32';
const subgroups = adapter.features.has('subgroups');
const ran = [];
selectionHooks.onCall = (names) => ran.push(names);  // { family: variant name } of each GPU call
after(() => {
  Object.assign(selectionHooks, { clock: null, onCall: null });
  configure({ gpuKernels: {} });
});

const TILED_ALL = [TILED, 'q8r128x128'];
test(`${TILED_ALL.join(' and ')} are q8linear candidates for calls of more than DECODE_MAX_L rows, ${SPLIT} for calls of at most DECODE_MAX_L, on any device`, () => {
  const names = (rows) => fittingVariants('q8linear', { limits: {}, features: new Set() }, { rows }).map((v) => v.name);
  assert.deepEqual(names(DECODE_MAX_L + 1), ['q8tile16', ...TILED_ALL]);
  assert.deepEqual(names(16384), ['q8tile16', ...TILED_ALL]);
  assert.deepEqual(names(DECODE_MAX_L), ['q8tile16', SPLIT]);
  assert.deepEqual(names(1), ['q8tile16', SPLIT]);
});

// A WASM and a WebGPU module (on `on`) with the same random weights.
async function pair(create, on = gpu) {
  const wasm = await MultiHeadAttention.create({ ...create, backend: 'wasm' });
  const onGpu = await MultiHeadAttention.create({ ...create, backend: 'webgpu', gpu: on });
  const next = rng(9);
  const sd = Object.fromEntries(wasm.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
  wasm.loadStateDict(sd);
  onGpu.loadStateDict(sd);
  return { wasm, onGpu, next, dispose: () => { wasm.dispose(); onGpu.dispose(); } };
}

// B batch rows of L queries and one key each: attention hands each query row its key's value
// row exactly, so the output is the value and output projections' bits on both backends.
async function oneKeyCall({ wasm, onGpu, next }, B, L, pins) {
  const { embedDim: E, kdim, vdim } = wasm.config;
  const q = randomTensor([B, L, E], next), k = randomTensor([B, 1, kdim], next), v = randomTensor([B, 1, vdim], next);
  const want = (await wasm.forward(q, k, v)).output;
  configure({ gpuKernels: pins });
  const from = ran.length;
  try {
    return { actual: (await onGpu.forward(q, k, v)).output, want, ran: ran.slice(from).map((names) => names.q8linear), rows: ran.slice(from).map((names) => names.q8rows) };
  } finally {
    configure({ gpuKernels: {} });
  }
}

// `variant` pinned in modules of `widths` ([E, heads, kdim, vdim]), int8 and int4 weights: WASM's
// bits on oneKeyCall()s of `calls` ([B, L]); `other` ([B, L]) a call it does not fit, where the
// default runs instead.
function pinnedInModules(variant, title, widths, calls, other) {
  for (const weightsDtype of ['int8', 'int4']) {
    test(`${weightsDtype} weights: ${title}`, async () => {
      for (const [embedDim, numHeads, kdim, vdim] of widths) {
        const modules = await pair({ embedDim, numHeads, kdim, vdim, weightsDtype, activations: 'int8' });
        try {
          for (const [B, L] of calls) {
            const r = await oneKeyCall(modules, B, L, { q8linear: variant });
            assert.deepEqual(r.ran, [variant], `${variant} ran`);
            assertSame(r.actual, r.want, `E ${embedDim} kdim ${kdim} vdim ${vdim}, B ${B} L ${L}`);
          }
          const outside = await oneKeyCall(modules, ...other, { q8linear: variant });
          assert.deepEqual(outside.ran, ['q8tile16'], `B ${other[0]} L ${other[1]}: the pin gives way to the default`);
        } finally {
          modules.dispose();
        }
      }
    });
  }
}

describe(`${TILED} pinned in a module: WASM's bits`, () => pinnedInModules(TILED,
  'value projections of 1 and 2 rows, output projections of 5 to 140 rows, odd widths; a call of one row gives way',
  [[40, 5, 33, 70], [64, 4, 64, 96], [24, 3, 7, 130]], [[1, 5], [2, 3], [2, 70]], [1, 1]));

describe(`${SPLIT} pinned in a module: WASM's bits`, () => pinnedInModules(SPLIT,
  'projections of 1 to 4 rows, odd widths; a call of 5 rows gives way',
  [[40, 5, 33, 70], [24, 3, 7, 130]], [[1, 1], [3, 1], [2, 2]], [1, 5]));

test(`the selection measures ${TILED} and ${SG} on calls of many rows, checks them on the device and keeps them where fastest`, async () => {
  // Faster by the injected clock: the tiled product, and the subgroup quantiser where offered.
  selectionHooks.clock = (names) => (names.q8linear === TILED ? 1 : 2) + (names.q8rows === SG ? 0 : 4);
  const modules = await pair({ embedDim: 40, numHeads: 5, weightsDtype: 'int4', activations: 'int8' }, createGpu());
  try {
    ran.length = 0;
    // attention pinned: the calls measure the two q8 families; every result WASM's bits.
    for (let i = 0; i < 14; i++) {
      const r = await oneKeyCall(modules, 2, 40, { attention: 'tile64x16' });
      assertSame(r.actual, r.want, `call ${i} (${r.ran}, ${r.rows})`);
    }
    const profile = modules.onGpu.gpuProfile();
    assert.deepEqual(profile.rejected, []);
    const chosen = (family) => profile.classes.filter((c) => c.family === family).map((c) => c.chosen);
    assert.deepEqual(chosen('q8linear'), [TILED], JSON.stringify(profile.classes));
    assert.deepEqual(chosen('q8rows'), subgroups ? [SG] : [], JSON.stringify(profile.classes));
  } finally {
    selectionHooks.clock = null;
    configure({ gpuKernels: {} });
    modules.dispose();
  }
});

describe(`q8rows: ${SG} (the block max by subgroup operations) on the subgroup size of the adapter`, () => {
  test('a candidate with the subgroups feature, never without it; its WGSL enables subgroups first', () => {
    const names = (features) => fittingVariants('q8rows', { limits: {}, features }, {}).map((v) => v.name);
    assert.deepEqual(names(new Set(['subgroups'])), ['tree32', SG]);
    assert.deepEqual(names(new Set()), ['tree32']);
    assert.deepEqual(names(undefined), ['tree32']);
    assert.match(VARIANTS.q8rows[SG].shader({}), /^enable subgroups;\n/);
    assert.doesNotMatch(VARIANTS.q8rows.tree32.shader({}), /subgroup/);
  });

  test('alone: the codes and scales of tree32, bit for bit (zeros, NaN, ±Inf, -0, subnormal and huge values, K 1 to 100)', { skip: !subgroups && 'the adapter has no subgroups' }, async () => {
    const on = await (await gpu.requestAdapter()).requestDevice({ requiredFeatures: ['subgroups'] });
    try {
      for (const K of [1, 4, 31, 33, 100]) {
        const M = 6, blocks = Math.ceil(K / BLOCK), next = rng(K);
        const x = Float32Array.from({ length: M * K }, () => next() * 8);
        x.fill(0, K, 2 * K);  // row 1: all zeros
        x[2 * K + (K >> 1)] = NaN;  // row 2
        x[3 * K] = Infinity;  // row 3
        if (K > 1) x[3 * K + K - 1] = -Infinity;
        for (let k = 0; k < K; k++) x[4 * K + k] = [-0, 1e-45, -3e-39, 3e38, -1.5, 0.5][k % 6];  // row 4
        x[5 * K + K - 1] = -200;  // row 5: its max at the block's last value
        const params = packParams(Q8_ROWS_PARAMS, { M, K, xOff: 0, xStride: K });
        const data = [params, x, new Uint32Array(M * blocks * (BLOCK / 4)).fill(0xdeadbeef), new Uint32Array(M * blocks).fill(0xdeadbeef)];
        const run = async (name, out) => runKernel(on, VARIANTS.q8rows[name].shader({}), [blocks, M, 1], data, out);
        for (const [out, what] of [[2, 'codes'], [3, 'scales']]) {
          const [want, got] = [await run('tree32', out), await run(SG, out)];
          assert.deepEqual(got, want, `K ${K}: ${what}`);
        }
      }
    } finally {
      on.destroy();
    }
  });

  for (const weightsDtype of ['int8', 'int4']) {
    test(`${weightsDtype} weights, ${SG} pinned (with each q8linear variant): WASM's bits`, { skip: !subgroups && 'the adapter has no subgroups' }, async () => {
      const modules = await pair({ embedDim: 40, numHeads: 5, kdim: 33, vdim: 70, weightsDtype, activations: 'int8' });
      try {
        for (const q8linear of Object.keys(VARIANTS.q8linear)) {
          for (const [B, L] of [[1, 1], [2, 70]]) {
            const r = await oneKeyCall(modules, B, L, { q8rows: SG, q8linear });
            assert.deepEqual(r.rows, [SG], 'the subgroup quantiser ran');
            assertSame(r.actual, r.want, `${q8linear}, B ${B} L ${L}`);
          }
        }
      } finally {
        modules.dispose();
      }
    });
  }
});
