// weightsDtype 'int4' (docs/attention-math/storage.md §11) through the public API, beside the contract
// cases that storage_dtypes.test.js and kernel_cases.test.js run on it: a NaN or ±inf in a block
// is a StateDictError naming the entry, the index, the row and the block, and the module keeps
// computing with its earlier weights (no reload in between); the stored values differ from
// float32's by more than the tolerance (so the cases tell the storage apart); and the backends:
// int4 modules look for a GPU as every module does ('webgpu' at create(), 'auto' at its
// threshold; tests/webgpu/node_int4_weights.test.mjs runs them there). scripts/test.sh runs tests/js on every single-threaded module and on the pool.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BackendError, MultiHeadAttention, OptionError, StateDictError } from '#webattention';
import { compare, randomMhaCase, randomTensor, rng } from '../contract/contract.mjs';
import { roundToHalf } from '../../web/src/storage/half_floats.js';
import { WasmExecutor, coreConfig, resolveMhaConfig, resolveModuleStateDict } from '../internals.mjs';
import { quantizeQ4 } from '../../web/src/storage/q4_0.js';
import { dequantisedValues } from '../../web/src/storage/quantised_tensors.js';
import { loadNodeCore } from '../../web/src/node_core.js';
import { pickVariant } from '../../web/src/wasm/variant.js';

const { core } = await loadNodeCore(pickVariant());

const E = 64;  // two blocks of 32 per weight row

test('a NaN or ±inf in an int4 block names the entry, row and block; the module keeps its weights', async () => {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, weightsDtype: 'int4' });
  try {
    const next = rng(7);
    const stateDict = Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));
    mha.loadStateDict(stateDict);
    const x = randomTensor([1, 3, E], rng(8));
    const before = (await mha.forward(x, x, x)).output.data;
    for (const bad of [NaN, Infinity, -Infinity]) {
      const data = Float32Array.from(stateDict['out_proj.weight'].data, (v) => v * 2);  // every value changed
      data[3 * E + 40] = bad;  // row 3, column 40: block 1
      const others = { ...stateDict, in_proj_weight: { data: stateDict.in_proj_weight.data.map((v) => -v), shape: [3 * E, E] } };
      for (const w of [{ data, shape: [E, E] }, { data: roundToHalf('float16', data), shape: [E, E], dtype: 'float16' }]) {
        assert.throws(() => mha.loadStateDict({ ...others, 'out_proj.weight': w }), (e) => {
          assert.ok(e instanceof StateDictError, String(e));
          assert.equal(e.argument, 'out_proj.weight');
          assert.equal(e.message, `stateDict['out_proj.weight']: int4 weights (create({ weightsDtype: 'int4' })) must be finite, `
            + `got ${bad} at [3, 40] (block 1 of row 3)`);
          assert.deepEqual([e.actual.row, e.actual.block], [3, 1]);
          return true;
        });
      }
      assert.deepEqual((await mha.forward(x, x, x)).output.data, before, `after a refused ${bad}`);
    }
  } finally {
    mha.dispose();
  }
});

test('the stored values matter: an int4 module differs from the float32 and the int8 ones by more than the tolerance', () => {
  const c = randomMhaCase(3, { weightsDtype: 'int4' });
  for (const other of ['float32', 'int8']) {
    const o = randomMhaCase(3, { weightsDtype: other });
    assert.ok(!compare({ data: c.expected.output.data, shape: c.expected.output.shape }, o.expected.output).ok,
      `the int4 reference equals the ${other} one: the cases would not tell the storage apart`);
  }
});

test("int4 modules look for a GPU as others do: 'webgpu' at create(), 'auto' at its threshold (here none: WASM)", async () => {
  const asked = { webgpu: 0, auto: 0 };
  // One GPU object per backend: a device found (or not) is shared by the modules of one object.
  const noAdapter = (backend) => ({ requestAdapter: async () => { asked[backend]++; return null; } });
  await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'int4', backend: 'webgpu', gpu: noAdapter('webgpu') }), (e) => {
    assert.ok(e instanceof BackendError, String(e));
    assert.notEqual(e.argument, 'weightsDtype', 'int4 weights refused on WebGPU');
    return true;
  });
  assert.equal(asked.webgpu, 1, "backend 'webgpu' with int4 weights asked for no adapter");
  const mha = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'int4', backend: 'auto', gpu: noAdapter('auto'), webgpuMinFlops: 0 });
  try {
    const next = rng(9);
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)])));
    const x = randomTensor([2, 4, 8], rng(10));
    await mha.forward(x, x, x);
    assert.equal(mha.backend, 'wasm');
  } finally {
    mha.dispose();
  }
  assert.equal(asked.auto, 1, "'auto' asked for no adapter at its first call above the threshold");
});

// 'auto' checks the GPU options of an int4 module as of every other: a `gpu` of the wrong kind
// is an OptionError naming it.
test("backend 'auto' with int4 weights checks the gpu option: a wrong kind is an OptionError", async () => {
  for (const gpu of ['swiftshader', 42, { requestDevice: 1 }]) {
    for (const weightsDtype of ['float32', 'int4']) {
      await assert.rejects(MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype, backend: 'auto', gpu }), (e) => {
        assert.ok(e instanceof OptionError, `${weightsDtype}, gpu ${String(gpu)}: ${e}`);
        assert.equal(e.argument, 'gpu');
        return true;
      });
    }
  }
});

test("the WebGPU backend's q4_0 quantiser (storage/q4_0.js) stores the core's values bit for bit, edge blocks included", () => {
  // One 64 × 64 out_proj weight: random rows, then blocks of zeros, of a negative extreme, of
  // values on the half steps of their block (ties of w · id + 8.5), of equal magnitudes of both
  // signs, and of extremes so small that 1 / d overflows float32.
  const E = 64, x = randomTensor([E, E], rng(21)).data;
  x.fill(0, 0, 32);
  x.set([-2, 1, 0.5, 1.5], 32);
  for (let i = 0; i < 32; i++) x[64 + i] = ((i % 17) - 8) / 4 + 0.125;
  for (let i = 0; i < 32; i++) x[96 + i] = i % 2 ? 3 : -3;
  for (let i = 0; i < 32; i++) x[128 + i] = (i - 16) * 2 ** -130;
  const config = resolveMhaConfig({ embedDim: E, numHeads: 4, weightsDtype: 'int4' });
  const executor = new WasmExecutor(core, config, coreConfig(config));
  try {
    const sd = Object.fromEntries(executor.parameterSpecs().map(({ name, shape }) => [name, { data: name === 'out_proj.weight' ? x : new Float32Array(shape.reduce((a, b) => a * b, 1)), shape }]));
    executor.loadStateDict(resolveModuleStateDict(executor.parameterSpecs(), sd, undefined, 'int4'));
    const stored = executor.readStateDict().find((e) => e.name === 'out_proj.weight').data;
    const ours = dequantisedValues({ dtype: 'int4', ...quantizeQ4(x, E) }, E);
    const i = ours.findIndex((v, j) => !Object.is(v, stored[j]));
    assert.equal(i, -1, `value ${i} (${x[i]}): q4_0.js stores ${ours[i]}, the core ${stored[i]}`);
  } finally {
    executor.dispose();
  }
});
