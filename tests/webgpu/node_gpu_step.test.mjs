// GpuStep (docs/webgpu/steps.md#one-submit-per-step, "A step recorded once"): the calls
// of a step recorded once (forward() into out places, a caller's pass by encode()) and replay()ed
// token after token, bit for bit the same calls made anew into a GpuBatch on twin caches (rotary,
// int4 weights, a windowed cache whose ring wraps), one submit a replay; a replay's Dawn calls (one
// uniform write, one compute pass, the submit's error scopes; a call without a cache writes its
// rotary table in scopes of its own); one module twice in a step (a submit between its calls, as
// recorded); a decoder's step with cross-attention on an encoded cache. What cannot be replayed and replays that cannot run are typed errors that record nothing;
// a refused submit and a throw from fn put the caches back. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch, GpuStep, MultiHeadAttention, scaledDotProductAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { adapterName, device, freshDevice, randomStateDict, seededModules } from './node_setup.mjs';
import { COPY_DST, COPY_SRC, STORAGE, gpuTensor } from './gpu_tensor_inputs.mjs';
import { counted } from './gpu_batch_steps.mjs';
import { STEP_KEYS, passHooks } from '../internals.mjs';

const E = 16;
const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, backend: 'webgpu' });
const USAGE = STORAGE | COPY_SRC | COPY_DST;
const row = (seed) => gpuTensor(filled(E, seed), [1, 1, E]);
const kept = () => ({ gpuBuffer: device.createBuffer({ size: E * 4, usage: USAGE }), shape: [1, 1, E] });

// The page's own pass: y = h + x by copies and a tiny kernel would do; a copy of h into y is enough
// to prove the order (the next layer reads y).
const copyInto = (from, to) => (encoder) => { encoder.copyBufferToBuffer(from.gpuBuffer, 0, to.gpuBuffer, 0, E * 4); };

// Three layers (the second with int4 weights, the third on a windowed cache), places[i] each
// layer's out, the caller's copy of layer 0's output into `moved` between layers 0 and 1.
async function stack(seed) {
  const layers = [await module({}, seed), await module({ weightsDtype: 'int4' }, seed + 1), await module({}, seed + 2)];
  const caches = () => [layers[0].createCache({ maxLength: 32 }), layers[1].createCache({ maxLength: 32 }),
    layers[2].createCache({ maxLength: 32, window: 3 })];
  return { layers, caches };
}
async function step({ layers }, caches, x, places, moved, batch) {
  const into = (i) => ({ cache: caches[i], output: 'gpu-buffer', out: places[i], batch });
  await layers[0].forward(x, x, x, into(0));
  batch.encode(device, copyInto(places[0], moved));
  await layers[1].forward(moved, moved, moved, into(1));
  return (await layers[2].forward(places[1], places[1], places[1], into(2))).output;
}

// A GpuStep recorded by run(ours, step) and replayed for 4 tokens beside run(twins, batch) made anew
// into a GpuBatch: bit for bit at each token, each replay's Dawn calls (counted()) given to
// check(counts, token); x, the step's input, rewritten from `seed` before each token. Returns the
// recording's Dawn calls (counted(), to its submit()).
async function replayBeside(run, [ours, twins], x, seed, check) {
  const gpuStep = new GpuStep();
  const recording = await counted(async () => {
    const output = await run(ours, gpuStep);
    await gpuStep.submit();
    return output;
  });
  const last = recording.result;
  const batch = new GpuBatch();
  for (let token = 0; token < 4; token++) {
    const want = await run(twins, batch);
    await batch.submit();
    if (token > 0) check(await counted(() => gpuStep.replay()), token);
    assert.deepEqual(await last.read(), await want.read(), `token ${token}`);
    device.queue.writeBuffer(x.gpuBuffer, 0, filled(E, seed + token));
  }
  return recording;
}

describe(`GpuStep (Dawn, ${adapterName})`, () => {
  test('replay() token after token: one submit each, the calls made anew bit for bit, the caches alike', async () => {
    const model = await stack(900);
    const [ours, twins] = [model.caches(), model.caches()];
    const x = row(901);  // the step's input, rewritten before each token
    const [places, twinPlaces] = [[kept(), kept(), kept()], [kept(), kept(), kept()]];
    const [moved, twinMoved] = [kept(), kept()];
    const gpuStep = new GpuStep();
    const last = await step(model, ours, x, places, moved, gpuStep);
    await gpuStep.submit();
    const batch = new GpuBatch();
    for (let token = 0; token < 8; token++) {
      const want = await step(model, twins, x, twinPlaces, twinMoved, batch);
      await batch.submit();
      if (token > 0) {
        const { submits } = await counted(() => gpuStep.replay());
        assert.equal(submits, 1, `token ${token}: one queue.submit()`);
      }
      assert.deepEqual(await last.read(), await want.read(), `token ${token}`);
      assert.deepEqual(ours.map((c) => c.length), twins.map((c) => c.length));
      device.queue.writeBuffer(x.gpuBuffer, 0, filled(E, 910 + token));  // the next token's input
    }
    assert.deepEqual(await ours[2].read(), await twins[2].read(), 'the windowed cache, wrapped');
  });

  test('a replay plays its calls as encoded (no encoding, no rotary table written) within STEP_KEYS keys; encoded anew across the bound, after the pool changed, after a truncate: bit for bit', async () => {
    // The twin calls on a module of their own: none of their writes lands in the step's buffers.
    const [mha, twinMha] = [await module({}, 990), await module({}, 990)];
    const [ours, twin] = [mha, twinMha].map((m) => m.createCache({ maxLength: STEP_KEYS + 16 }));
    const prompt = { data: filled((STEP_KEYS - 6) * E, 991), shape: [1, STEP_KEYS - 6, E] };
    await mha.forward(prompt, prompt, prompt, { cache: ours });
    await twinMha.forward(prompt, prompt, prompt, { cache: twin });
    const long = { data: filled(2 * STEP_KEYS * E, 994), shape: [1, 2 * STEP_KEYS, E] };  // longer than the prompt
    const x = row(992);
    const [place, twinPlace] = [kept(), kept()];
    const gpuStep = new GpuStep();
    const last = (await mha.forward(x, x, x, { cache: ours, output: 'gpu-buffer', out: place, batch: gpuStep })).output;
    await gpuStep.submit();
    const batch = new GpuBatch();
    let encodings = 0;
    passHooks.onDispatches = () => { encodings++; };
    try {
      for (let token = 0; token < 12; token++) {
        if (token === 10) [ours, twin].forEach((c) => c.truncate(c.length - 3));  // rolled back, within the bound
        const want = (await twinMha.forward(x, x, x, { cache: twin, output: 'gpu-buffer', out: twinPlace, batch })).output;
        await batch.submit();
        if (token === 8) await mha.forward(long, long, long);  // the pool's buffers made larger
        encodings = 0;
        const { writes } = token > 0 ? await counted(() => gpuStep.replay()) : {};
        assert.deepEqual(await last.read(), await want.read(), `token ${token}`);
        assert.equal(ours.length, twin.length);
        const crossed = ours.length === STEP_KEYS + 1;  // this replay's keys passed the bound
        assert.equal(encodings, token > 0 && (crossed || token === 8) ? 1 : 0, `token ${token} at length ${ours.length}`);
        // A played tape writes its uniforms alone: its rotary table spans the bound's positions.
        if (token > 0 && encodings === 0) assert.equal(writes, 1, `token ${token}: writeBuffer() calls`);
        device.queue.writeBuffer(x.gpuBuffer, 0, filled(E, 993 + token));
      }
    } finally {
      passHooks.onDispatches = null;
    }
    assert.deepEqual(await ours.read(), await twin.read(), 'the caches alike');
  });

  test('a replay whose tapes all play: one uniform write, one compute pass and the submit\'s error scopes alone, bit for bit; its recording one pass', async () => {
    const layers = [];
    for (let i = 0; i < 4; i++) layers.push(await module({}, 1000 + i));
    const [ours, twins] = [0, 1].map(() => ({ caches: layers.map((m) => m.createCache({ maxLength: 16 })), places: [kept(), kept()] }));
    const x = row(1010);
    const run = async ({ caches, places }, batch) => {
      let t = x;
      for (const [i, m] of layers.entries()) t = (await m.forward(t, t, t, { cache: caches[i], output: 'gpu-buffer', out: places[i % 2], batch })).output;
      return t;
    };
    const recording = await replayBeside(run, [ours, twins], x, 1020, (counts, token) => {
      assert.deepEqual([counts.submits, counts.writes, counts.passes, counts.scopes], [1, 1, 1, 2], `token ${token}: submits, writes, passes, scopes`);
    });
    // Its calls copy nothing in (inputs and out places bound as they are): recorded in one pass too.
    assert.deepEqual([recording.submits, recording.passes], [1, 1], 'the recording: submits, passes');
    assert.deepEqual(await ours.caches[3].read(), await twins.caches[3].read(), 'the last caches alike');
  });

  test('a call without a cache (its rotary table written at each play, in scopes of its own) before a cached one: bit for bit, one pass', async () => {
    const [plain, cached] = [await module({}, 1030), await module({}, 1031)];
    const [ours, twins] = [0, 1].map(() => ({ cache: cached.createCache({ maxLength: 16 }), places: [kept(), kept()] }));
    const x = row(1032);
    const run = async ({ cache, places }, batch) => {
      const h = (await plain.forward(x, x, x, { output: 'gpu-buffer', out: places[0], batch })).output;
      return (await cached.forward(h, h, h, { cache, output: 'gpu-buffer', out: places[1], batch })).output;
    };
    await replayBeside(run, [ours, twins], x, 1040, (counts, token) => {
      assert.deepEqual([counts.writes, counts.passes, counts.scopes], [2, 1, 4], `token ${token}: the table and the uniforms; one pass; the table's scopes and the submit's`);
    });
  });

  test('one module twice in the step (two caches): replayed as the calls made anew, two submits as recorded', async () => {
    const mha = await module({}, 960);
    const [ours, twins] = [[mha.createCache({ maxLength: 8 }), mha.createCache({ maxLength: 8 })], [mha.createCache({ maxLength: 8 }), mha.createCache({ maxLength: 8 })]];
    const x = row(961);
    const run = async (caches, places, batch) => {
      const h = (await mha.forward(x, x, x, { cache: caches[0], output: 'gpu-buffer', out: places[0], batch })).output;
      return (await mha.forward(h, h, h, { cache: caches[1], output: 'gpu-buffer', out: places[1], batch })).output;
    };
    const gpuStep = new GpuStep();
    const last = await run(ours, [kept(), kept()], gpuStep);
    await gpuStep.submit();
    const batch = new GpuBatch();
    const twinPlaces = [kept(), kept()];
    await run(twins, twinPlaces, batch);
    await batch.submit();
    for (let token = 1; token < 4; token++) {
      device.queue.writeBuffer(x.gpuBuffer, 0, filled(E, 970 + token));
      const want = await run(twins, twinPlaces, batch);
      await batch.submit();
      const { submits } = await counted(() => gpuStep.replay());
      assert.equal(submits, 2, 'the module\'s second call submits the first, as recorded');
      assert.deepEqual(await last.read(), await want.read(), `token ${token}`);
    }
  });

  test("a decoder's step: self-attention, then cross-attention on an encoded cache (which appends nothing), replayed as made anew", async () => {
    const [self, cross] = [await module({}, 980), await module({ rotary: undefined }, 981)];
    const memory = { data: filled(5 * E, 982), shape: [1, 5, E] };
    const [ours, twins] = [0, 1].map(() => [self.createCache({ maxLength: 8 })]);
    const [encoded, twinEncoded] = [await cross.encode(memory, memory), await cross.encode(memory, memory)];
    const x = row(983);
    const run = async (cache, memoryCache, places, batch) => {
      const h = (await self.forward(x, x, x, { cache, output: 'gpu-buffer', out: places[0], batch })).output;
      return (await cross.forward(h, null, null, { cache: memoryCache, output: 'gpu-buffer', out: places[1], batch })).output;
    };
    const gpuStep = new GpuStep();
    const last = await run(ours[0], encoded, [kept(), kept()], gpuStep);
    await gpuStep.submit();
    const batch = new GpuBatch();
    const twinPlaces = [kept(), kept()];
    await run(twins[0], twinEncoded, twinPlaces, batch);
    await batch.submit();
    for (let token = 1; token < 3; token++) {
      const want = await run(twins[0], twinEncoded, twinPlaces, batch);
      await batch.submit();
      await gpuStep.replay();
      assert.deepEqual(await last.read(), await want.read(), `token ${token}`);
      assert.equal(encoded.length, 5, 'the encoded cache appends nothing');
    }
  });

  test('what cannot be replayed, and replays that cannot run: typed errors, nothing recorded; the step usable after', async () => {
    const model = await stack(920);
    const caches = model.caches();
    const x = row(921);
    const places = [kept(), kept(), kept()];
    const moved = kept();
    const gpuStep = new GpuStep();
    await assert.rejects(gpuStep.replay(), { name: 'OptionError', argument: 'batch' });  // still recording
    await step(model, caches, x, places, moved, gpuStep);
    await gpuStep.submit();
    await assert.rejects(model.layers[0].forward(x, x, x, { output: 'gpu-buffer', out: places[0], batch: gpuStep }), { name: 'OptionError', argument: 'batch' });
    await assert.rejects(scaledDotProductAttention(x, x, x, { gpu: device, output: 'gpu-buffer', out: places[0], batch: gpuStep }), { name: 'OptionError', argument: 'batch' });
    assert.throws(() => gpuStep.encode(device, () => {}), { name: 'OptionError', argument: 'batch' });
    // One replay() at a time.
    const first = gpuStep.replay();
    await assert.rejects(gpuStep.replay(), { name: 'OptionError', argument: 'batch' });
    await first;
    // A cache with no room: CacheError naming cache, no length moved.
    const full = model.layers[0].createCache({ maxLength: 2 });
    const short = new GpuStep();
    await model.layers[0].forward(x, x, x, { cache: full, output: 'gpu-buffer', out: places[0], batch: short });
    await short.submit();
    await short.replay();
    await assert.rejects(short.replay(), { name: 'CacheError', argument: 'cache' });
    assert.equal(full.length, 2);
    // Calls that could not be replayed, refused at the call: no out, a host input, a mask,
    // needWeights, scaledDotProductAttention(); nothing recorded.
    const host = { data: filled(E, 3), shape: [1, 1, E] };
    const refusals = [
      ['no out', x, {}],
      ['a host input', host, { out: places[0] }],
      ['a mask', x, { out: places[0], attnMask: { data: new Float32Array(1), shape: [1, 1] } }],
      ['needWeights', x, { out: places[0], needWeights: true }],
    ];
    const refusing = new GpuStep();
    for (const [what, input, options] of refusals) {
      await assert.rejects(model.layers[0].forward(input, input, input, { output: 'gpu-buffer', batch: refusing, ...options }),
        { name: 'OptionError', argument: 'batch' }, what);
    }
    await assert.rejects(scaledDotProductAttention(x, x, x, { gpu: device, output: 'gpu-buffer', out: places[0], batch: refusing }),
      { name: 'OptionError', argument: 'batch' }, 'scaledDotProductAttention()');
    assert.equal(refusing.pending, 0, 'nothing recorded');
    const lengths = caches.map((c) => c.length);
    caches[1].dispose();
    await assert.rejects(gpuStep.replay(), { name: 'DisposedError', argument: 'cache' });
    assert.deepEqual([caches[0].length, caches[2].length], [lengths[0], lengths[2]], 'nothing ran');
  });

  test('a lost device: replay() rejects with a typed error', async () => {
    const other = await freshDevice();
    const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, numKvHeads: 2, rotary: {}, backend: 'webgpu', gpu: other });
    mha.loadStateDict(randomStateDict(mha.stateDictShapes, 990));
    const on = (data) => gpuTensor(data, [1, 1, E], { on: other });
    const x = on(filled(E, 991));
    const out = { gpuBuffer: other.createBuffer({ size: E * 4, usage: USAGE }) };
    const gpuStep = new GpuStep();
    await mha.forward(x, x, x, { cache: mha.createCache({ maxLength: 8 }), output: 'gpu-buffer', out, batch: gpuStep });
    await gpuStep.submit();
    other.destroy();
    await new Promise((resolve) => setTimeout(resolve, 10));
    await assert.rejects(gpuStep.replay(), (e) => ['DisposedError', 'BackendError'].includes(e.name) && e.argument === 'batch');
    mha.dispose();
  });

  test('a throw from fn, and a destroyed input at the submit: rejected, every cache back; the next replay runs', async () => {
    const model = await stack(940);
    const [ours, twins] = [model.caches(), model.caches()];
    const x = row(941);
    const places = [kept(), kept(), kept()];
    let moved = kept();
    let fail = false;
    const gpuStep = new GpuStep();
    const into = (i) => ({ cache: ours[i], output: 'gpu-buffer', out: places[i], batch: gpuStep });
    await model.layers[0].forward(x, x, x, into(0));
    gpuStep.encode(device, (encoder) => {
      if (fail) throw new RangeError('mine');
      copyInto(places[0], moved)(encoder);
    });
    await model.layers[1].forward(moved, moved, moved, into(1));
    const last = (await model.layers[2].forward(places[1], places[1], places[1], into(2))).output;
    await gpuStep.submit();
    const batch = new GpuBatch();
    const twin = [kept(), kept(), kept()];
    const twinMoved = kept();
    await step(model, twins, x, twin, twinMoved, batch);
    await batch.submit();
    fail = true;
    await assert.rejects(gpuStep.replay(), { name: 'RangeError', message: 'mine' });
    assert.deepEqual(ours.map((c) => c.length), [1, 1, 1], 'the throw put every cache back');
    fail = false;
    const doomed = moved;
    doomed.gpuBuffer.destroy();  // layer 1's recorded input
    await assert.rejects(gpuStep.replay(), (e) => e.name === 'BackendError' && e.argument === 'query' && /call 2 of the step/.test(e.message));
    assert.deepEqual(ours.map((c) => c.length), [1, 1, 1], 'the refused submit put every cache back');
    moved = null;
    // Usable: a fresh step on the same caches replays as the calls made anew.
    const again = new GpuStep();
    const fresh = await step(model, ours, x, places, kept(), again);
    await again.submit();
    const want = await step(model, twins, x, twin, twinMoved, batch);
    await batch.submit();
    assert.deepEqual(await fresh.read(), await want.read());
    assert.ok(last);
  });

  test('dispose(): a recording dropped (caches back), its buffer destroyed, a replay under way stopped; the modules usable', async () => {
    const model = await stack(960);
    const [ours, twins] = [model.caches(), model.caches()];
    const x = row(961);
    const [places, twinPlaces] = [[kept(), kept(), kept()], [kept(), kept(), kept()]];
    const [moved, twinMoved] = [kept(), kept()];
    const dropped = new GpuStep();
    await step(model, ours, x, places, moved, dropped);
    assert.equal((await counted(() => dropped.dispose())).submits, 0, 'nothing submitted');
    assert.deepEqual([dropped.pending, ...ours.map((c) => c.length)], [0, 0, 0, 0], 'the recording dropped, its caches back');
    const gpuStep = new GpuStep();
    await step(model, ours, x, places, moved, gpuStep);
    await gpuStep.submit();
    await gpuStep.replay();
    assert.equal((await counted(() => gpuStep.dispose())).destroys, 1, "the step's one uniform buffer (three layers' slots)");
    await assert.rejects(gpuStep.replay(), { name: 'DisposedError', argument: 'batch' });
    await assert.rejects(model.layers[0].forward(x, x, x, { cache: ours[0], output: 'gpu-buffer', out: places[0], batch: gpuStep }),
      { name: 'DisposedError', argument: 'batch' });
    assert.throws(() => gpuStep.encode(device, () => {}), { name: 'DisposedError', argument: 'batch' });
    gpuStep.dispose();  // a second: nothing
    const stopped = new GpuStep();
    await step(model, ours, x, places, moved, stopped);
    await stopped.submit();
    const replaying = stopped.replay();
    stopped.dispose();
    await assert.rejects(replaying, { name: 'DisposedError', argument: 'batch' });
    assert.deepEqual(ours.map((c) => c.length), [3, 3, 3], 'the stopped replay put every cache back');
    // Disposed by its last work, an encode() fn, with every call recorded: stopped all the same.
    const ending = new GpuStep();
    const alone = model.layers[0].createCache({ maxLength: 32 });
    await model.layers[0].forward(x, x, x, { cache: alone, output: 'gpu-buffer', out: kept(), batch: ending });
    ending.encode(device, () => { if (alone.length > 1) ending.dispose(); });
    await ending.submit();
    await assert.rejects(ending.replay(), { name: 'DisposedError', argument: 'batch' });
    assert.equal(alone.length, 1, 'its cache back');
    // Usable: a step made anew on the same caches, bit for bit the twins' fourth.
    const batch = new GpuBatch();
    for (let token = 0; token < 3; token++) {
      await step(model, twins, x, twinPlaces, twinMoved, batch);
      await batch.submit();
    }
    const want = await step(model, twins, x, twinPlaces, twinMoved, batch);
    await batch.submit();
    const got = await step(model, ours, x, places, moved, batch);
    await batch.submit();
    assert.deepEqual(await got.read(), await want.read());
  });
});
