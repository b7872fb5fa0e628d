// GpuStep replays (dispatch/gpu_step.js) of the options a step's tape (webgpu/step_tape.js) has to
// follow token after token, each bit for bit the same call made anew into a GpuBatch on a twin
// module (the same weights, buffers of its own, so none of its writes lands in the step's): sinks
// and softcap on an int8 cache of two rows, qkNorm with int8 activations, float16 input and `out`
// with three rows a step on a float16 cache, a windowed cache whose ring wraps under two rows a
// step, more rows a step than the decode kernels take (the flash kernels over the keys' bound),
// the module's other calls writing their rotary tables into its pooled buffer between plays (its
// tape then encoded anew), tensors the kernels cannot bind as they are (an input without STORAGE usage, an out at a
// byteOffset or without STORAGE), and an out that is the input's own buffer. Each replay plays the
// call's tape (no encoding), and copies nothing where the kernels bind the step's tensors as they
// are (encoding_context.js bindsAsIs()). An out place destroyed between replays
// is refused at the submit, naming `out`; a replay past a given rotary table's rows, before it
// records anything, naming `rotary.table`. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch, GpuStep } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { adapterName, device, seededModules } from './node_setup.mjs';
import { COPY_DST, COPY_SRC, STORAGE, gpuTensor, halfGpuTensor } from './gpu_tensor_inputs.mjs';
import { DECODE_MAX_L, passHooks, roundToHalf } from '../internals.mjs';
import { counted } from './gpu_batch_steps.mjs';

const E = 16;
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu' });
const USAGE = STORAGE | COPY_SRC | COPY_DST;
const TOKENS = 6;

const CASES = [
  { name: 'sinks and softcap, an int8 cache of two rows', create: { sinks: true, softcap: 1.5, rotary: {} }, cache: { dtype: 'int8', batchSize: 2 }, B: 2 },
  { name: 'qkNorm, int8 activations over int8 weights', create: { qkNorm: {}, rotary: {}, weightsDtype: 'int8', activations: 'int8' }, cache: {} },
  { name: 'float16 input and out, three rows a step, a float16 cache', create: { rotary: { dim: 2 } }, cache: { dtype: 'float16' }, rows: 3, half: true },
  { name: 'a windowed cache whose ring wraps, two rows a step', create: { rotary: {} }, cache: { window: 5 }, rows: 2 },
  { name: `the flash kernels: ${DECODE_MAX_L + 1} rows a step`, create: { rotary: {} }, cache: {}, rows: DECODE_MAX_L + 1 },
  // Tensors the kernels cannot bind as they are, copied on the device at each replay.
  { name: 'an input without STORAGE usage, an out at a byteOffset', create: { rotary: {} }, cache: {}, inputUsage: COPY_SRC | COPY_DST, outOffset: 256 },
  { name: 'an out without STORAGE usage', create: { rotary: {} }, cache: {}, outUsage: COPY_SRC | COPY_DST },
];
// Whether a case's tensors are all bound as they are (STORAGE, from byte 0): its replays copy nothing.
const boundAsIs = (c) => !c.inputUsage && !c.outUsage && !c.outOffset;

// The step's input ([B, rows, E]: float32, or float16 words) with the values of `seed`, and
// writing it again with another seed's.
function input({ B = 1, rows = 1, half = false, inputUsage = USAGE }, seed) {
  const values = (s) => filled(B * rows * E, s);
  const shape = [B, rows, E];
  if (!half) {
    const tensor = gpuTensor(values(seed), shape, { usage: inputUsage });
    return { tensor, rewrite: (s) => device.queue.writeBuffer(tensor.gpuBuffer, 0, values(s)) };
  }
  const bits = (s) => roundToHalf('float16', values(s));
  const tensor = halfGpuTensor(bits(seed), shape);
  return { tensor, rewrite: (s) => device.queue.writeBuffer(tensor.gpuBuffer, 0, bits(s)) };
}

// An `out` place for the case's output.
function place({ B = 1, rows = 1, half = false, outUsage = USAGE, outOffset = 0 }) {
  const words = B * rows * E;
  const bytes = half ? Math.ceil(words / 2) * 4 : words * 4;
  const gpuBuffer = device.createBuffer({ size: outOffset + bytes, usage: outUsage });
  return { gpuBuffer, byteOffset: outOffset, shape: [B, rows, E], ...(half ? { dtype: 'float16' } : {}) };
}

describe(`GpuStep replays of every option (Dawn, ${adapterName})`, () => {
  for (const [index, c] of CASES.entries()) {
    test(`${c.name}: each replay bit for bit the call made anew`, async () => {
      const seed = 1200 + 10 * index;
      const [mha, twin] = [await module(c.create, seed), await module(c.create, seed)];
      const [ours, theirs] = [mha, twin].map((m) => m.createCache({ maxLength: 64, ...c.cache }));
      const x = input(c, seed + 1);
      const [at, twinAt] = [place(c), place(c)];
      const call = (m, cache, out, batch) => m.forward(x.tensor, x.tensor, x.tensor, { cache, output: 'gpu-buffer', out, batch });
      const gpuStep = new GpuStep();
      const last = (await call(mha, ours, at, gpuStep)).output;
      await gpuStep.submit();
      const batch = new GpuBatch();
      for (let token = 0; token < TOKENS; token++) {
        const want = (await call(twin, theirs, twinAt, batch)).output;
        await batch.submit();
        let encodings = 0;
        passHooks.onDispatches = () => { encodings++; };
        let copies;
        try {
          ({ copies } = await counted(() => token > 0 && gpuStep.replay()));
        } finally {
          passHooks.onDispatches = null;
        }
        assert.equal(encodings, 0, `token ${token}: the tape played, nothing encoded anew`);
        if (token > 0) assert.equal(copies === 0, boundAsIs(c), `token ${token}: ${copies} copies`);
        assert.deepEqual(await last.read(), await want.read(), `token ${token}`);
        assert.equal(ours.length, theirs.length);
        x.rewrite(seed + 2 + token);
      }
      assert.deepEqual(await ours.read(), await theirs.read(), 'the caches alike');
    });
  }

  test('in place: out is the input\'s own buffer (bound as it is for both), each replay bit for bit a batched twin\'s', async () => {
    const [mha, twin] = [await module({ rotary: {} }, 1280), await module({ rotary: {} }, 1280)];
    const [ours, theirs] = [mha, twin].map((m) => m.createCache({ maxLength: 16 }));
    const [x, twinX] = [input({}, 1281), input({}, 1281)];
    const call = (m, cache, t, batch) => m.forward(t, t, t, { cache, output: 'gpu-buffer', out: t, batch });
    const gpuStep = new GpuStep();
    const last = (await call(mha, ours, x.tensor, gpuStep)).output;
    await gpuStep.submit();
    const batch = new GpuBatch();
    for (let token = 0; token < 4; token++) {
      const want = (await call(twin, theirs, twinX.tensor, batch)).output;
      await batch.submit();
      if (token > 0) await gpuStep.replay();
      const got = await last.read();
      assert.deepEqual(got, await want.read(), `token ${token}`);
      assert.ok(got.every(Number.isFinite));
    }
  });

  test("the module's other calls writing their rotary tables between plays (unbatched at other positions; twice in the step on caches past other bounds): bit for bit", async () => {
    const [mha, twin] = [await module({ rotary: {} }, 1310), await module({ rotary: {} }, 1310)];
    const prompt = (rows) => ({ data: filled(rows * E, 1311), shape: [1, rows, E] });
    const caches = async (m) => {
      const made = [m.createCache({ maxLength: 400 }), m.createCache({ maxLength: 400 }), m.createCache({ maxLength: 400 })];
      for (const [cache, rows] of [[made[1], 300], [made[2], 100]]) await m.forward(prompt(rows), prompt(rows), prompt(rows), { cache });
      return made;
    };
    const [ours, theirs] = [await caches(mha), await caches(twin)];
    const x = input({}, 1312);
    const [places, twinPlaces] = [[place({}), place({})], [place({}), place({})]];
    const run = async (m, cached, at, batch) => {
      const outputs = [];
      for (const i of [0, 1]) outputs.push((await m.forward(x.tensor, x.tensor, x.tensor, { cache: cached[i], output: 'gpu-buffer', out: at[i], batch })).output);
      return outputs;
    };
    const gpuStep = new GpuStep();
    const last = await run(mha, ours, places, gpuStep);
    await gpuStep.submit();
    const batch = new GpuBatch();
    for (let token = 0; token < 4; token++) {
      const want = await run(twin, theirs, twinPlaces, batch);
      await batch.submit();
      if (token > 0) await gpuStep.replay();
      for (const i of [0, 1]) assert.deepEqual(await last[i].read(), await want[i].read(), `token ${token}: call ${i}`);
      const rows = prompt(3);  // the module's third sequence, unbatched, at positions 100 on
      for (const [m, cache] of [[mha, ours[2]], [twin, theirs[2]]]) await m.forward(rows, rows, rows, { cache });
      x.rewrite(1320 + token);
    }
  });

  test('a given rotary table: a replay past its rows is a ShapeError naming rotary.table, nothing recorded', async () => {
    const positions = 3;
    const rows = (seed) => ({ data: filled(positions * 2, seed), shape: [positions, 2] });  // head width 4: 2 angles
    const mha = await module({ rotary: { table: { cos: rows(1301), sin: rows(1302) } } }, 1300);
    const cache = mha.createCache({ maxLength: 16 });
    const x = input({}, 1303);
    const gpuStep = new GpuStep();
    const last = (await mha.forward(x.tensor, x.tensor, x.tensor, { cache, output: 'gpu-buffer', out: place({}), batch: gpuStep })).output;
    await gpuStep.submit();
    await gpuStep.replay();
    await gpuStep.replay();
    const before = await last.read();
    await assert.rejects(gpuStep.replay(), (e) => e.name === 'ShapeError' && e.argument === 'rotary.table' && /call 0 of the step/.test(e.message));
    assert.equal(cache.length, positions, 'nothing appended');
    assert.deepEqual(await last.read(), before, 'nothing written');
    assert.ok(before.every(Number.isFinite));
  });

  test('an out place destroyed after a replay: the next replay (its tape) rejects naming out, the cache back', async () => {
    const mha = await module({ rotary: {} }, 1290);
    const cache = mha.createCache({ maxLength: 16 });
    const x = input({}, 1291);
    const at = place({});
    const gpuStep = new GpuStep();
    await mha.forward(x.tensor, x.tensor, x.tensor, { cache, output: 'gpu-buffer', out: at, batch: gpuStep });
    await gpuStep.submit();
    await gpuStep.replay();
    assert.equal(cache.length, 2);
    at.gpuBuffer.destroy();
    await assert.rejects(gpuStep.replay(), (e) => e.name === 'BackendError' && e.argument === 'out');
    assert.equal(cache.length, 2, 'the refused submit put the cache back');
  });
});
