// A refused loadStateDict() changes nothing (tests/contract/failed_load.mjs) on the WASM module
// the environment picks and on the worker pool (threads: 2): per weightsDtype, a state dict whose
// last entry is bad (a non-finite int8 weight, a 16-bit weight of the other kind, a +Inf sink, a
// wrong shape) is a typed error naming that key, and the module's outputs and bilinear forms stay
// bit for bit those of the weights it had. tests/webgpu/node_failed_load.test.mjs runs it on WebGPU.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as api from '#webattention';
import { WEIGHTS_DTYPES, assertFailedLoadsChangeNothing } from '../contract/failed_load.mjs';
import { heapHooks, poolTestHooks } from '../internals.mjs';
import { filled, seededStateDict } from '../contract/random.mjs';

for (const weightsDtype of WEIGHTS_DTYPES) {
  test(`${weightsDtype} weights: a refused state dict leaves the module's outputs as its earlier weights gave them`, async () => {
    assert.ok(await assertFailedLoadsChangeNothing(api, weightsDtype) >= 4);
  });

  test(`${weightsDtype} weights on the worker pool (threads: 2): a refused state dict changes neither the workers nor the calling thread`, async () => {
    let tasks = 0;
    poolTestHooks.beforeRun = () => { tasks += 1; };
    try {
      assert.ok(await assertFailedLoadsChangeNothing(api, weightsDtype, { threads: 2 }) >= 4);
    } finally {
      poolTestHooks.beforeRun = null;
    }
    assert.ok(tasks > 0, 'no call ran on the workers');
  });
}

test('a non-finite int8 weight is named as the caller gave it: a separate q/k/v weight, a prefixed hf key, GPT-2\'s Conv1D [in, out]', async () => {
  const mha = await api.MultiHeadAttention.create({ embedDim: 8, numHeads: 2, weightsDtype: 'int8' });
  const tensor = (shape, nanAt) => {
    const data = new Float32Array(shape[0] * shape[1]).fill(0.25);
    if (nanAt !== undefined) data[nanAt] = nanAt % 2 ? Infinity : NaN;
    return { data, shape };
  };
  const bias = (n) => ({ data: new Float32Array(n), shape: [n] });
  const separate = { q_proj_weight: tensor([8, 8]), k_proj_weight: tensor([8, 8]), v_proj_weight: tensor([8, 8], 10),
    in_proj_bias: bias(24), 'out_proj.weight': tensor([8, 8]), 'out_proj.bias': bias(8) };
  const hf = { 'm.q_proj.weight': tensor([8, 8]), 'm.k_proj.weight': tensor([8, 8]), 'm.v_proj.weight': tensor([8, 8]),
    'm.o_proj.weight': tensor([8, 8], 63), 'm.q_proj.bias': bias(8), 'm.k_proj.bias': bias(8), 'm.v_proj.bias': bias(8), 'm.o_proj.bias': bias(8) };
  const gpt2 = { 'c_attn.weight': tensor([8, 24], 30), 'c_attn.bias': bias(24), 'c_proj.weight': tensor([8, 8]), 'c_proj.bias': bias(8) };
  try {
    for (const [sd, options, key, says] of [
      [separate, undefined, 'v_proj_weight', 'got NaN at [1, 2] (block 0 of row 1)'],
      [hf, { layout: 'hf', prefix: 'm.' }, 'm.o_proj.weight', 'got Infinity at [7, 7] (block 0 of row 7)'],
      [gpt2, { layout: 'gpt2' }, 'c_attn.weight', 'got NaN at [1, 6] (block 0 of row 6)'],
    ]) {
      assert.throws(() => mha.loadStateDict(sd, options), (e) => {
        assert.ok(e instanceof api.StateDictError, `${key}: ${e}`);
        assert.equal(e.argument, key);
        assert.equal(e.message, `stateDict['${key}']: int8 weights (create({ weightsDtype: 'int8' })) must be finite, ${says}`);
        return true;
      });
    }
  } finally {
    mha.dispose();
  }
});

// Out of memory part-way (the second entry's copy): the first entry is in, the others are not, so
// the module would mix two state dicts. It forgets every entry instead: forward() refuses as before
// a first load, on the calling thread and with workers, and the next load gives exactly what a
// fresh module with that state dict gives.
for (const threads of [1, 2]) {
  test(`threads: ${threads}: a load that runs out of memory part-way leaves no mix of two state dicts; the next load works`, async () => {
    const options = { embedDim: 8, numHeads: 2, threads };
    const x = { data: filled(2 * 3 * 8, 5), shape: [2, 3, 8] };
    const fresh = await api.MultiHeadAttention.create(options);
    fresh.loadStateDict(seededStateDict(fresh.stateDictShapes, 200));
    const expected = (await fresh.forward(x, x, x)).output.data;
    const baseline = await api.wasmMemoryInUse();
    const mha = await api.MultiHeadAttention.create(options);
    try {
      mha.loadStateDict(seededStateDict(mha.stateDictShapes, 100));
      await mha.forward(x, x, x);
      let mallocs = 0;
      heapHooks.malloc = (core, bytes) => (++mallocs === 2 ? 0 : core._malloc(bytes));
      try {
        assert.throws(() => mha.loadStateDict(seededStateDict(mha.stateDictShapes, 200)), api.MemoryError);
      } finally {
        heapHooks.malloc = null;
      }
      assert.equal(mallocs, 2, 'the hook did not see the load');
      await assert.rejects(mha.forward(x, x, x), (e) => e instanceof api.StateDictError && /was not loaded \(call loadStateDict\(\) first\)/.test(e.message));
      mha.loadStateDict(seededStateDict(mha.stateDictShapes, 200));
      assert.deepEqual((await mha.forward(x, x, x)).output.data, expected);
      // Exact once the module is gone (the weights the failed load replaced may be stored in
      // blocks of another size than before it, so the heap is not compared mid-way).
      mha.dispose();
      assert.equal(await api.wasmMemoryInUse(), baseline, 'the failed load leaked');
    } finally {
      mha.dispose();
      fresh.dispose();
    }
  });
}
