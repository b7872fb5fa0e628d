// The worker pool (threads > 1): the `threads` option, results equal to the single-thread path,
// typed errors from workers, worker failures, dispose() and leaks (a process's exit with a pool:
// threads_process.test.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import {
  MultiHeadAttention, wasmMemoryInUse, OptionError, ShapeError, DisposedError, WorkerError, WebAttentionError,
} from '#webattention';
import { halfStateDict, poolTestHooks as testHooks } from '../internals.mjs';
import { randomTensor, rng } from '../contract/contract.mjs';

const randomStateDict = (mha, next) =>
  Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, randomTensor(shape, next)]));

/** Runs `body` with testHooks set to `hooks`, and puts them back after. */
async function withHooks(hooks, body) {
  const saved = { ...testHooks };
  Object.assign(testHooks, hooks);
  try {
    return await body();
  } finally {
    Object.assign(testHooks, saved);
  }
}

/** A pooled module and a single-thread one with the same weights; `pools` sees the pool made. */
async function pair(options, threads, seed = 1) {
  const pools = [];
  const pooled = await withHooks({ onPool: (p) => pools.push(p) }, () => MultiHeadAttention.create({ ...options, threads }));
  const single = await MultiHeadAttention.create({ ...options, threads: 1 });
  const sd = randomStateDict(single, rng(seed));
  pooled.loadStateDict(sd);
  single.loadStateDict(sd);
  return { pooled, single, pool: pools[0], sd, dispose: () => { pooled.dispose(); single.dispose(); } };
}

/** Counts the tasks posted to workers while `body` runs. */
async function countingTasks(body) {
  let posted = 0;
  await withHooks({ beforeRun: () => { posted += 1; } }, body);
  return posted;
}

function assertClose(actual, expected, tolerance, what) {
  assert.equal(actual.length, expected.length, what);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= tolerance, `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

test('threads: OptionError naming threads for anything but \'auto\' or an integer in [1, 64]', async () => {
  for (const bad of [0, -2, 1.5, 65, 'many', '2', true, null, NaN]) {
    await assert.rejects(() => MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: bad }), (e) => {
      assert.ok(e instanceof OptionError, `${String(bad)}: ${e}`);
      assert.equal(e.argument, 'threads');
      assert.match(e.message, /^threads: expected 'auto' or an integer in \[1, 64\], got /);
      return true;
    });
  }
  const saved = process.env.WEBATTENTION_THREADS;
  process.env.WEBATTENTION_THREADS = 'lots';
  try {
    await assert.rejects(() => MultiHeadAttention.create({ embedDim: 8, numHeads: 2 }),
      (e) => e instanceof OptionError && e.argument === 'WEBATTENTION_THREADS' && /got string "lots"/.test(e.message));
  } finally {
    if (saved === undefined) delete process.env.WEBATTENTION_THREADS;
    else process.env.WEBATTENTION_THREADS = saved;
  }
  const pools = [];
  await withHooks({ onPool: (p) => pools.push(p) }, async () => {
    const one = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 1 });
    assert.equal(one.threads, 1);
    one.dispose();
    const auto = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 'auto' });
    assert.equal(auto.threads, Math.min(availableParallelism(), 4));
    auto.dispose();
    assert.equal(pools.length, 0, 'threads: 1 makes no workers, nor does \'auto\' before a call big enough for them');
    const two = await MultiHeadAttention.create({ embedDim: 8, numHeads: 2, threads: 2 });
    two.dispose();
  });
  assert.equal(pools.length, 1, 'threads: 2 starts its workers at create()');
});

// [name, create options, threads, B (0: unbatched), L, S, forward options maker]
const cases = [
  ['head ranges (B = 1), self-attention, causal', { embedDim: 32, numHeads: 4 }, 2, 1, 40, 40, () => ({ isCausal: true })],
  ['batch ranges (B = 4)', { embedDim: 32, numHeads: 4 }, 2, 4, 9, 9, () => ({})],
  ['batch × head grid (B = 2, h = 4, 4 threads), per-head 3-D mask', { embedDim: 16, numHeads: 4 }, 4, 2, 7, 7,
    (next) => ({ attnMask: { data: Float32Array.from({ length: 2 * 4 * 7 * 7 }, () => next() * 4), shape: [8, 7, 7] } })],
  ['more threads than heads (h = 2, 4 threads)', { embedDim: 8, numHeads: 2 }, 4, 1, 6, 6, () => ({})],
  ['3 threads, 3 heads, batch 2, key padding', { embedDim: 12, numHeads: 3 }, 3, 2, 5, 5,
    () => ({ keyPaddingMask: { data: Uint8Array.from([0, 0, 1, 0, 1, 0, 1, 0, 0, 1]), shape: [2, 5] } })],
  ['cross-attention, free head dims, bool 3-D mask and key padding', { embedDim: 12, numHeads: 4, kdim: 7, vdim: 5, headDim: 5, valueHeadDim: 3 }, 2, 2, 6, 9,
    (next) => ({
      keyPaddingMask: { data: Uint8Array.from({ length: 18 }, (_, i) => (i % 9 === 4 ? 1 : 0)), shape: [2, 9] },
      attnMask: { data: Uint8Array.from({ length: 8 * 6 * 9 }, (_, i) => (i % 9 !== 0 && next() > 0.2 ? 1 : 0)), shape: [8, 6, 9] },
    })],
  ['unbatched input', { embedDim: 16, numHeads: 2 }, 2, 0, 5, 8, () => ({})],
  ['output projection split by rows too (L = 512, E = 128)', { embedDim: 128, numHeads: 4 }, 2, 1, 512, 512, () => ({ isCausal: true })],
  // Each batch's ids reach the worker of its rows (sliced with them), each head range all of them.
  ['batch × head grid with rotary positionIds, GQA (B = 2, 4 threads)', { embedDim: 16, numHeads: 4, numKvHeads: 2, rotary: {} }, 4, 2, 6, 6,
    () => ({ isCausal: true, positionIds: { data: Int32Array.from([9, 3, 3, 0, 70000, 1, 5, 4, 3, 2, 1, 0]), shape: [2, 6] } })],
  ['head ranges with positionIds into a rotary table (B = 1)', { embedDim: 16, numHeads: 4, rotary: { table: {
    cos: { data: Float32Array.from({ length: 10 }, (_, i) => Math.cos(i)), shape: [5, 2] },
    sin: { data: Float32Array.from({ length: 10 }, (_, i) => Math.sin(i)), shape: [5, 2] } } } }, 2, 1, 5, 5,
  () => ({ positionIds: { data: Int32Array.from([4, 0, 2, 2, 1]), shape: [1, 5] } })],
];

for (const [name, options, threads, B, L, S, makeOptions] of cases) {
  test(`pool equals the single-thread path: ${name}`, async () => {
    const next = rng(7);
    const { pooled, single, dispose } = await pair(options, threads);
    const lead = B ? [B] : [];
    const kdim = options.kdim ?? options.embedDim, vdim = options.vdim ?? options.embedDim;
    const query = randomTensor([...lead, L, options.embedDim], next);
    const self = kdim === options.embedDim && vdim === options.embedDim && L === S;
    const key = self ? query : randomTensor([...lead, S, kdim], next);
    const value = self ? query : randomTensor([...lead, S, vdim], next);
    const base = makeOptions(next);
    try {
      for (const extra of [{}, { needWeights: true }, { needWeights: true, averageAttnWeights: false }]) {
        const forwardOptions = { ...base, ...extra };
        const expected = await single.forward(query, key, value, forwardOptions);
        let actual;
        const posted = await countingTasks(async () => { actual = await pooled.forward(query, key, value, forwardOptions); });
        assert.ok(posted >= 1, 'the pool ran');
        assert.equal(pooled.threads, threads);
        assert.deepEqual(actual.output.shape, expected.output.shape);
        assert.deepEqual(actual.output.data, expected.output.data, 'output: bit for bit');
        if (!extra.needWeights) {
          assert.equal(actual.attnWeights, null);
        } else {
          assert.deepEqual(actual.attnWeights.shape, expected.attnWeights.shape);
          // Averaged weights of head ranges are shares added up: equal up to rounding.
          assertClose(actual.attnWeights.data, expected.attnWeights.data, extra.averageAttnWeights === false ? 0 : 1e-6, 'attnWeights');
        }
      }
    } finally {
      dispose();
    }
  });
}

test('\'auto\' keeps small calls on the calling thread and pools big ones', { skip: availableParallelism() < 2 && 'one core' }, async () => {
  const { pooled, single, pool, dispose } = await pair({ embedDim: 128, numHeads: 4 }, 'auto');
  try {
    assert.equal(pool, undefined, 'no workers before a call wants them');
    const next = rng(3);
    const small = randomTensor([1, 4, 128], next), big = randomTensor([1, 512, 128], next);
    const pools = [];
    await withHooks({ onPool: (p) => pools.push(p) }, async () => {
      assert.equal(await countingTasks(() => pooled.forward(small, small, small)), 0);
      assert.equal(pools.length, 0, 'a small call starts no workers');
      // The first big call runs on the calling thread and starts them once it has returned (its
      // result is not delayed by the spawn), never waiting for them.
      assert.equal(await countingTasks(() => pooled.forward(big, big, big)), 0);
      assert.equal(pools.length, 0, 'no workers spawned during the big call');
      // startSoon() uses setImmediate in Node, whose queue runs in order (a setTimeout(0) here
      // could fire first: timers and immediates have no fixed order outside I/O callbacks).
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(pools.length, 1, 'the big call started the workers after it returned');
    });
    await pools[0].memoryInUse();  // answered after the worker made the module: the pool is up
    let actual;
    assert.ok(await countingTasks(async () => { actual = await pooled.forward(big, big, big); }) >= 1);
    assert.deepEqual(actual.output.data, (await single.forward(big, big, big)).output.data);
  } finally {
    dispose();
  }
});

// 'auto' starts its workers after the state dict was loaded: float32 weights are read back from
// the calling thread's core then, 16-bit ones were copied at load time (with their dtype). Either
// way the workers hold what the caller loaded, not what its arrays hold later.
for (const [what, options, half] of [
  ['float32 weights', {}, null], ['float32 weights from float16 tensors', {}, 'float16'],
  ['float16 weights', { weightsDtype: 'float16' }, null], ['bfloat16 weights from bfloat16 tensors', { weightsDtype: 'bfloat16' }, 'bfloat16'],
]) {
  test(`'auto' workers started after loadStateDict() get the loaded weights: ${what}`, { skip: availableParallelism() < 2 && 'one core' }, async () => {
    const module = { embedDim: 128, numHeads: 4, ...options };
    const pools = [];
    const pooled = await withHooks({ onPool: (p) => pools.push(p) }, () => MultiHeadAttention.create({ ...module, threads: 'auto' }));
    const single = await MultiHeadAttention.create({ ...module, threads: 1 });
    try {
      const plain = randomStateDict(single, rng(5));
      const sd = half ? halfStateDict(plain, half) : plain;
      pooled.loadStateDict(sd);
      single.loadStateDict(sd);
      for (const t of Object.values(sd)) t.data.fill(7);  // the caller reuses its arrays
      const big = randomTensor([2, 512, 128], rng(6));
      const expected = await single.forward(big, big, big);
      await withHooks({ onPool: (p) => pools.push(p) }, async () => {
        assert.equal(await countingTasks(() => pooled.forward(big, big, big)), 0);
        await new Promise((resolve) => setTimeout(resolve, 0));
      });
      assert.equal(pools.length, 1, 'the workers started');
      await pools[0].memoryInUse();  // the workers have the module and its weights
      let actual;
      assert.ok(await countingTasks(async () => { actual = await pooled.forward(big, big, big); }) >= 1, 'the pool ran');
      assert.deepEqual(actual.output.data, expected.output.data);
    } finally {
      pooled.dispose();
      single.dispose();
    }
  });
}

test('loadStateDict() reaches the workers, again when reloaded', async () => {
  const { pooled, single, dispose } = await pair({ embedDim: 16, numHeads: 4 }, 2, 1);
  const next = rng(4);
  const x = randomTensor([1, 6, 16], next);
  try {
    assert.deepEqual((await pooled.forward(x, x, x)).output.data, (await single.forward(x, x, x)).output.data);
    const sd2 = randomStateDict(single, rng(99));
    pooled.loadStateDict(sd2);
    single.loadStateDict(sd2);
    assert.deepEqual((await pooled.forward(x, x, x)).output.data, (await single.forward(x, x, x)).output.data);
  } finally {
    dispose();
  }
});

test('an error inside a worker rejects with the same typed error; the pool keeps working', async () => {
  const { pooled, single, dispose } = await pair({ embedDim: 16, numHeads: 4 }, 2);
  const x = randomTensor([1, 6, 16], rng(5));
  try {
    // The worker's C++ core rejects a key padding mask of the wrong shape, as the main thread's would.
    const spoil = (pool, worker, message) => {
      message.plan.keyPaddingMask = { kind: 1, data: new Uint8Array(3), shape: [1, 3] };
    };
    await withHooks({ beforeRun: spoil }, () => assert.rejects(() => pooled.forward(x, x, x), (e) => {
      assert.ok(e instanceof ShapeError && e instanceof WebAttentionError, `${e?.name}: ${e?.message}`);
      assert.equal(e.name, 'ShapeError');
      assert.match(e.message, /keyPaddingMask: expected shape \[1, 6\], got \[1, 3\]/);
      return true;
    }));
    assert.equal(pooled.threads, 2);
    assert.ok(await countingTasks(async () => {
      assert.deepEqual((await pooled.forward(x, x, x)).output.data, (await single.forward(x, x, x)).output.data);
    }) >= 1, 'still pooled');
  } finally {
    dispose();
  }
});

for (const [how, breakIt, reason, hooks = {}] of [
  ['fails inside', (pool, worker, message) => { message.type = 'explode'; }, /worker 1 of 1 failed: unknown message type 'explode'/],
  ['exits during the call', (pool, worker) => { worker.terminate(); }, /worker 1 of 1 exited \(code 1\)/],
  // Its messages vanish (a hung or silently dead worker); budgets shortened to 0.3 s.
  ['stops answering', (pool, worker) => { worker.post = () => {}; }, /worker 1 of 1 did not answer within 0\.3 s/, { answerMs: () => 300 }],
]) {
  test(`a worker that ${how} rejects forward() with a WorkerError; the module carries on on one thread`, async () => {
    const { pooled, single, pool, dispose } = await pair({ embedDim: 16, numHeads: 4 }, 2);
    const x = randomTensor([2, 6, 16], rng(6));
    try {
      await withHooks({ beforeRun: breakIt, ...hooks }, () => assert.rejects(() => pooled.forward(x, x, x), (e) => {
        assert.ok(e instanceof WorkerError && e instanceof WebAttentionError, `${e?.name}: ${e?.message}`);
        assert.equal(e.name, 'WorkerError');
        assert.match(e.message, reason);
        assert.match(e.message, /calling thread alone \(threads = 1\)/);
        return true;
      }));
      assert.equal(pooled.threads, 1);
      assert.ok(pool.failure instanceof WorkerError);
      for (const options of [{}, { needWeights: true }]) {
        let actual;
        assert.equal(await countingTasks(async () => { actual = await pooled.forward(x, x, x, options); }), 0);
        const expected = await single.forward(x, x, x, options);
        assert.deepEqual(actual.output.data, expected.output.data);
        assert.deepEqual(actual.attnWeights?.data, expected.attnWeights?.data);
      }
    } finally {
      dispose();
    }
  });
}

// The call waits for the workers (explicit threads), which then fail to start: the pool executor
// computes it on the calling thread, as every later call.
test('a call waiting for workers that fail to start runs on the calling thread', async () => {
  const neverStarts = () => ({
    post: () => {}, onMessage: () => {}, terminate: () => {},
    onFailure: (fail) => setTimeout(() => fail('could not load its script (test)'), 50),
  });
  // The workers are spawned after create() returns: the hook stays set for the whole test.
  await withHooks({ spawnWorker: neverStarts }, async () => {
    const { pooled, single, pool, dispose } = await pair({ embedDim: 16, numHeads: 4 }, 2);
    const x = randomTensor([2, 6, 16], rng(7));
    try {
      assert.equal(pool.failure, null, 'the workers are still starting when the call is made');
      const actual = await pooled.forward(x, x, x, { needWeights: true });
      assert.match(pool.failure?.message ?? '', /could not load its script \(test\)/);
      assert.equal(pooled.threads, 1);
      const expected = await single.forward(x, x, x, { needWeights: true });
      assert.deepEqual(actual.output.data, expected.output.data);
      assert.deepEqual(actual.attnWeights.data, expected.attnWeights.data);
    } finally {
      dispose();
    }
  });
});

test('modules share one pool; the last dispose() stops it; the next module starts a new one', async () => {
  const next = rng(10);
  const a = await pair({ embedDim: 16, numHeads: 4 }, 3, 1);
  const b = await pair({ embedDim: 24, numHeads: 4, kdim: 8 }, 2, 2);
  assert.ok(a.pool, 'a made the pool');
  assert.equal(b.pool, undefined, 'b uses the same one');
  const x = randomTensor([2, 6, 16], next);
  const q = randomTensor([2, 6, 24], next), k = randomTensor([2, 6, 8], next), v = randomTensor([2, 6, 24], next);
  const checkA = async () => assert.deepEqual((await a.pooled.forward(x, x, x)).output.data, (await a.single.forward(x, x, x)).output.data);
  const checkB = async () => assert.deepEqual((await b.pooled.forward(q, k, v)).output.data, (await b.single.forward(q, k, v)).output.data);
  try {
    assert.equal(await countingTasks(() => Promise.all([checkA(), checkB(), checkA(), checkB()])), 4, 'calls of both modules in flight at once');
    const memory = await a.pool.memoryInUse();
    for (let i = 0; i < 5; i++) (await pair({ embedDim: 16, numHeads: 4 }, 3, i)).dispose();
    assert.deepEqual(await a.pool.memoryInUse(), memory, 'modules made and disposed on the workers leak nothing');
    a.dispose();
    assert.equal(a.pool.closed, false, 'b still uses the pool');
    await checkB();
  } finally {
    a.dispose();
    b.dispose();
  }
  assert.equal(a.pool.closed, true, 'no module left: the workers are stopped');
  assert.equal(a.pool.failure, null);
  const c = await pair({ embedDim: 16, numHeads: 4 }, 2);
  assert.ok(c.pool && c.pool !== a.pool, 'a new pool');
  assert.deepEqual((await c.pooled.forward(x, x, x)).output.data, (await c.single.forward(x, x, x)).output.data);
  c.dispose();
});

test('dispose() during a pooled forward() rejects it with DisposedError', async () => {
  const { pooled, dispose } = await pair({ embedDim: 16, numHeads: 4 }, 2);
  const x = randomTensor([1, 6, 16], rng(8));
  await pooled.forward(x, x, x);  // the workers are up
  const call = pooled.forward(x, x, x);
  dispose();
  await assert.rejects(call, DisposedError);
  await assert.rejects(() => pooled.forward(x, x, x), DisposedError);
});

test('no leaks: WASM memory stays flat on the calling thread and in every worker', async () => {
  const { pooled, pool, dispose } = await pair({ embedDim: 64, numHeads: 4 }, 3);
  const next = rng(9);
  const x = randomTensor([2, 64, 64], next), y = randomTensor([2, 64, 64], next);
  const spoil = (p, w, message) => { message.plan.keyPaddingMask = { kind: 1, data: new Uint8Array(3), shape: [1, 3] }; };
  try {
    const round = async (i) => {
      await pooled.forward(x, y, y, { needWeights: i % 2 === 0, averageAttnWeights: i % 4 === 0 });
      await withHooks({ beforeRun: spoil }, () => assert.rejects(() => pooled.forward(x, x, x), ShapeError));
    };
    await round(0);
    const before = [await wasmMemoryInUse(), ...(await pool.memoryInUse())];
    for (let i = 1; i <= 30; i++) await round(i);
    assert.deepEqual([await wasmMemoryInUse(), ...(await pool.memoryInUse())], before);
    assert.equal(pooled.threads, 3);
  } finally {
    dispose();
  }
});
