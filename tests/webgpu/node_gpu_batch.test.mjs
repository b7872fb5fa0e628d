// GpuBatch (README "Tensors on the GPU", docs/webgpu/steps.md#one-submit-per-step): a decode step through
// a stack of layers, each on its own KV cache, recorded into one batch is exactly one queue.submit()
// and no mapAsync until read(), bit for bit the per-layer path; read() before submit() submits; a
// module called twice in one batch; work outside the batch (an unbatched call of its module,
// cache.read(), another module on its result, dispose() of a batched call's cache or module)
// submitting it first; a GPU input destroyed before
// the submit is a typed error naming the call and its argument, the caches back to their lengths,
// the modules usable afterwards; bad `batch` options. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { GpuBatch, MultiHeadAttention } from '#webattention';
import { filled } from '../contract/contract.mjs';
import { adapterName, device, freshDevice, randomStateDict, seededModules } from './node_setup.mjs';
import { gpuTensor } from './gpu_tensor_inputs.mjs';
import { counted, step } from './gpu_batch_steps.mjs';

const E = 32;
const host = (rows, seed) => ({ data: filled(rows * E, seed), shape: [1, rows, E] });

const { module } = seededModules({ embedDim: E, numHeads: 4, numKvHeads: 2, backend: 'webgpu' });
const layer = (seed, options = {}) => module(options, seed);

describe(`GpuBatch (Dawn, ${adapterName})`, () => {
  for (const options of [{}, { weightsDtype: 'int4' }, { rotary: { dim: 8 }, cacheDtype: 'float16' }]) {
    test(`a decode step through 4 layers on their own caches is one submit, no mapAsync, the per-layer path bit for bit (${JSON.stringify(options)})`, async () => {
      const { cacheDtype, ...create } = options;
      const layers = await Promise.all([0, 1, 2, 3].map((i) => layer(100 + i, create)));
      const cacheOptions = { maxLength: 32, ...(cacheDtype ? { dtype: cacheDtype } : {}) };
      const perLayer = layers.map((m) => m.createCache(cacheOptions));
      const batched = layers.map((m) => m.createCache(cacheOptions));
      const batch = new GpuBatch();
      for (const [s, rows] of [[0, 5], [1, 1], [2, 1], [3, 1]]) {
        const x = gpuTensor(host(rows, 200 + s).data, [1, rows, E]);
        const want = await step(layers, perLayer, x);
        const { submits, maps, result: got } = await counted(async () => {
          const out = await step(layers, batched, x, batch);
          assert.equal(batch.pending, layers.length);
          await batch.submit();
          return out;
        });
        assert.equal(submits, 1, `step ${s}: one queue.submit()`);
        assert.equal(maps, 0, `step ${s}: no mapAsync before read()`);
        assert.deepEqual(await got.read(), await want.read(), `step ${s}`);
        assert.deepEqual(batched.map((c) => c.length), perLayer.map((c) => c.length));
        for (const t of [got, want]) t.dispose();
        x.gpuBuffer.destroy();
      }
      assert.deepEqual(await batched[3].read(), await perLayer[3].read());
    });
  }

  test('read() before submit() submits the batch; a module called twice in one batch submits once more, same values', async () => {
    const [a, b] = [await layer(300), await layer(301)];
    const caches = [a.createCache({ maxLength: 8 }), b.createCache({ maxLength: 8 }), a.createCache({ maxLength: 8 })];
    const reference = [a.createCache({ maxLength: 8 }), b.createCache({ maxLength: 8 }), a.createCache({ maxLength: 8 })];
    const x = gpuTensor(host(2, 302).data, [1, 2, E]);
    const want = await step([a, b, a], reference, x);
    const batch = new GpuBatch();
    const { submits, result } = await counted(async () => {
      const got = await step([a, b, a], caches, x, batch);
      return { got, values: await got.read() };
    });
    assert.equal(submits, 3, 'two for the batch (a twice), one for read()\'s copy');
    assert.deepEqual(result.values, await want.read());
    assert.equal(batch.pending, 0);
    await batch.submit();  // nothing left: resolves
    for (const t of [result.got, want]) t.dispose();
    x.gpuBuffer.destroy();
  });

  test('work outside the batch on its modules, caches or results submits the batch first: the values of submitting first', async () => {
    const [a, b, c] = [await layer(350), await layer(351), await layer(352)];
    const x = gpuTensor(host(3, 353).data, [1, 3, E]);
    const reference = [a.createCache({ maxLength: 8 }), b.createCache({ maxLength: 8 })];
    const wantB = await step([a, b], reference, x, null);
    const wantC = (await c.forward(wantB, wantB, wantB, { output: 'gpu-buffer' })).output;
    const wantOther = (await a.forward(x, x, x, { output: 'gpu-buffer' })).output;
    const caches = [a.createCache({ maxLength: 8 }), b.createCache({ maxLength: 8 })];
    const cases = [
      ['an unbatched call of a module in the batch', async (out) => {
        const other = (await a.forward(x, x, x, { output: 'gpu-buffer' })).output;
        assert.deepEqual(await other.read(), await wantOther.read());
        other.dispose();
        assert.deepEqual(await out.read(), await wantB.read());
      }],
      ["cache.read() of a batched call's cache", async (out) => {
        assert.deepEqual(await caches[0].read(), await reference[0].read());
        assert.deepEqual(await out.read(), await wantB.read());
      }],
      ['a call of a module outside the batch on a batched result', async (out) => {
        const next = (await c.forward(out, out, out, { output: 'gpu-buffer' })).output;
        assert.deepEqual(await next.read(), await wantC.read());
        next.dispose();
      }],
    ];
    for (const [what, check] of cases) {
      for (const cache of caches) cache.reset();
      const batch = new GpuBatch();
      const out = await step([a, b], caches, x, batch);
      assert.equal(batch.pending, 2);
      await check(out);
      assert.equal(batch.pending, 0, `${what}: the batch was submitted`);
      out.dispose();
    }
    for (const t of [wantB, wantC, wantOther]) t.dispose();
    x.gpuBuffer.destroy();
  });

  test("dispose() of a batched call's cache or module submits the batch first: its results read as the per-layer path's", async () => {
    const x = gpuTensor(host(1, 600).data, [1, 1, E]);
    for (const what of ['cache', 'module']) {
      const layers = [await layer(601), await layer(602)];
      const want = await step(layers, layers.map((m) => m.createCache({ maxLength: 8 })), x, null);
      const caches = layers.map((m) => m.createCache({ maxLength: 8 }));
      const batch = new GpuBatch();
      const got = await step(layers, caches, x, batch);
      assert.equal(batch.pending, 2);
      if (what === 'cache') caches[0].dispose();
      else layers[0].dispose();
      assert.equal(batch.pending, 0, `${what}.dispose(): the batch was submitted first`);
      await batch.submit();
      assert.deepEqual(await got.read(), await want.read(), what);
      for (const t of [got, want]) t.dispose();
    }
    x.gpuBuffer.destroy();
  });

  test('a GPU input destroyed before submit(): a BackendError naming the call and query; the caches back; usable afterwards', async () => {
    const layers = [await layer(400), await layer(401)];
    const caches = layers.map((m) => m.createCache({ maxLength: 8 }));
    const reference = layers.map((m) => m.createCache({ maxLength: 8 }));
    const first = gpuTensor(host(2, 402).data, [1, 2, E]);
    await step(layers, caches, first, null).then((t) => t.dispose());
    await step(layers, reference, first, null).then((t) => t.dispose());
    const batch = new GpuBatch();
    const h = (await layers[0].forward(first, first, first, { cache: caches[0], output: 'gpu-buffer', batch })).output;
    const doomed = gpuTensor(host(1, 403).data, [1, 1, E]);
    const out = (await layers[1].forward(doomed, doomed, doomed, { cache: caches[1], output: 'gpu-buffer', batch })).output;
    assert.deepEqual(caches.map((c) => c.length), [4, 3]);
    doomed.gpuBuffer.destroy();
    await assert.rejects(batch.submit(), (e) => e.name === 'BackendError' && e.argument === 'query' && /call 1 of the batch/.test(e.message));
    assert.deepEqual(caches.map((c) => c.length), [2, 2], 'both caches back to their lengths before the batch');
    await assert.rejects(out.read(), { name: 'BackendError' });
    for (const t of [h, out]) t.dispose();
    // Usable: the next step equals the reference's.
    const x = gpuTensor(host(1, 404).data, [1, 1, E]);
    const got = await step(layers, caches, x, batch);
    const want = await step(layers, reference, x, null);
    assert.deepEqual(await got.read(), await want.read());
    for (const t of [got, want]) t.dispose();
    for (const t of [first, x]) t.gpuBuffer.destroy();
  });

  test('a call made after a submit() not awaited waits for its verdict: refused, the calls planned on its appends are CacheErrors, no rows read unwritten', async () => {
    const layers = [await layer(410), await layer(411)];
    const caches = layers.map((m) => m.createCache({ maxLength: 8 }));
    const reference = layers.map((m) => m.createCache({ maxLength: 8 }));
    const first = gpuTensor(host(2, 412).data, [1, 2, E]);
    for (const c of [caches, reference]) await step(layers, c, first, null).then((t) => t.dispose());
    const batch = new GpuBatch();
    const doomed = gpuTensor(host(1, 413).data, [1, 1, E]);
    const h = (await layers[0].forward(doomed, doomed, doomed, { cache: caches[0], output: 'gpu-buffer', batch })).output;
    doomed.gpuBuffer.destroy();
    const refused = batch.submit();
    // Made at once, planned on the refused append (length 3): a batched step, an unbatched call.
    const x = gpuTensor(host(1, 414).data, [1, 1, E]);
    const next = step(layers, caches, x, new GpuBatch());
    const unbatched = layers[0].forward(x, x, x, { cache: caches[0], output: 'gpu-buffer' });
    await assert.rejects(refused, { name: 'BackendError', argument: 'query' });
    for (const [call, planned] of [[next, 3], [unbatched, 4]]) {
      await assert.rejects(call, (e) => e.name === 'CacheError' && e.argument === 'cache' && e.expected === planned && e.actual === 2);
    }
    assert.deepEqual(caches.map((c) => c.length), [2, 2], 'the caches where the refused batch found them');
    h.dispose();
    // Usable, at the lengths the refusal left: the next step equals the reference's.
    const got = await step(layers, caches, x, new GpuBatch());
    const want = await step(layers, reference, x, null);
    assert.deepEqual(await got.read(), await want.read());
    assert.deepEqual(caches.map((c) => c.length), [3, 3]);
    for (const t of [got, want]) t.dispose();
    for (const t of [first, x]) t.gpuBuffer.destroy();
  });

  test('work on a cache from outside the batch that holds a call on it submits the batch first and waits for its verdict: refused, it sees the cache where the batch found it', async () => {
    const m = await layer(420);
    const x = gpuTensor(host(2, 421).data, [1, 2, E]);
    const y = gpuTensor(host(1, 422).data, [1, 1, E]);
    const output = { output: 'gpu-buffer' };
    const nextOn = async (cache) => {
      const t = (await m.forward(y, y, y, { cache, ...output })).output;
      const values = await t.read();
      t.dispose();
      return values;
    };
    // A cache at length 2 (x), its changes made as they should be (`change`), and its next call's output.
    const atTwo = async (change = () => {}) => {
      const cache = m.createCache({ maxLength: 8 });
      (await m.forward(x, x, x, { cache, ...output })).output.dispose();
      change(cache);
      return cache;
    };
    const planned = (e) => e.name === 'CacheError' && e.argument === 'cache' && e.expected === 3 && e.actual === 2;
    // Each case: the work, and the cache's length after it (the refused append not among them).
    const cases = {
      'an unbatched call': [(cache) => assert.rejects(m.forward(y, y, y, { cache, ...output }), planned), 2],
      'a call of another batch': [(cache) => assert.rejects(m.forward(y, y, y, { cache, ...output, batch: new GpuBatch() }), planned), 2],
      'read()': [async (cache) => assert.deepEqual(await cache.read(), await (await atTwo()).read()), 2],
      'fork()': [async (cache) => {
        const fork = cache.fork();  // planned on the append, as the cache's own calls
        await assert.rejects(nextOn(fork), planned);
        assert.deepEqual(await nextOn(fork), await nextOn(await atTwo()));
      }, 2],
      'truncate(1)': [async (cache) => {
        cache.truncate(1);
        assert.deepEqual(await nextOn(cache), await nextOn(await atTwo((c) => c.truncate(1))));
      }, 2],
      'reset()': [async (cache) => {
        cache.reset();
        assert.equal(cache.length, 0);
        assert.deepEqual(await nextOn(cache), await nextOn(await atTwo((c) => c.reset())));
      }, 1],
    };
    // Made once the batched call was recorded, and while it is still being made (not awaited).
    for (const [what, [work, length]] of Object.entries(cases)) {
      for (const inFlight of [false, true]) {
        const cache = await atTwo();
        const doomed = gpuTensor(host(1, 423).data, [1, 1, E]);
        const batch = new GpuBatch();
        const made = m.forward(doomed, doomed, doomed, { cache, ...output, batch });
        const h = inFlight ? made : (await made).output;
        doomed.gpuBuffer.destroy();
        await work(cache);
        const label = `${what}${inFlight ? ', the batched call in flight' : ''}`;
        assert.equal(batch.pending, 0, `${label}: the batch was submitted first`);
        const result = inFlight ? (await h).output : h;
        await assert.rejects(result.read(), { name: 'BackendError', argument: 'query' }, label);
        // The caller's submit() (nothing recorded since) reports the refusal of the one made for it, once.
        await assert.rejects(batch.submit(), { name: 'BackendError', argument: 'query' }, label);
        await batch.submit();
        assert.equal(cache.length, length, label);
      }
    }
    // A second call of the batch not awaited, made into its next submit: planned on the refused
    // append, a CacheError once the verdict is in, whoever submitted first.
    for (const submitter of ['submit()', "the first result's read()"]) {
      const cache = await atTwo();
      const doomed = gpuTensor(host(1, 424).data, [1, 1, E]);
      const batch = new GpuBatch();
      const h = (await m.forward(doomed, doomed, doomed, { cache, ...output, batch })).output;
      doomed.gpuBuffer.destroy();
      const second = m.forward(y, y, y, { cache, ...output, batch });
      await assert.rejects(submitter === 'submit()' ? batch.submit() : h.read(), { name: 'BackendError' }, submitter);
      await assert.rejects(second, planned, submitter);
      assert.equal(cache.length, 2, submitter);
    }
    for (const t of [x, y]) t.gpuBuffer.destroy();
  });

  test("bad `batch`: not a GpuBatch (a Proxy of one, one on its prototype), without output 'gpu-buffer', or one of another device: OptionError; nothing recorded", async () => {
    const mha = await layer(500);
    const x = host(1, 501);
    await assert.rejects(mha.forward(x, x, x, { batch: {}, output: 'gpu-buffer' }), { name: 'OptionError', argument: 'batch' });
    // Impostors that instanceof takes for one: their first private read threw mid-call.
    for (const impostor of [new Proxy(new GpuBatch(), {}), Object.create(GpuBatch.prototype)]) {
      await assert.rejects(mha.forward(x, x, x, { batch: impostor, output: 'gpu-buffer' }), { name: 'OptionError', argument: 'batch' });
    }
    const batch = new GpuBatch();
    await assert.rejects(mha.forward(x, x, x, { batch }), { name: 'OptionError', argument: 'output' });
    const other = await freshDevice();
    const elsewhere = await MultiHeadAttention.create({ embedDim: E, numHeads: 4, backend: 'webgpu', gpu: other });
    elsewhere.loadStateDict(randomStateDict(elsewhere.stateDictShapes, 502));
    const r = await mha.forward(x, x, x, { batch, output: 'gpu-buffer' });
    await assert.rejects(elsewhere.forward(x, x, x, { batch, output: 'gpu-buffer' }), { name: 'OptionError', argument: 'batch' });
    assert.equal(batch.pending, 1);
    await batch.submit();
    assert.deepEqual(await r.output.read(), (await mha.forward(x, x, x)).output.data);
    r.output.dispose();
    elsewhere.dispose();
    other.destroy();
  });
});
