// weightsDtype 'int4' (docs/attention-math.md §11) through the public API, beside the contract
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

// Keeping int4 on WASM must not skip the checks of the GPU options that 'auto' makes for every
// other module: a `gpu` of the wrong kind is still an OptionError naming it.
test("backend 'auto' with int4 weights still checks the gpu option: a wrong kind is an OptionError", async () => {
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
