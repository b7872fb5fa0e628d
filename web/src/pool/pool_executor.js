// The pool executor (dispatch.js's Executor): one module's forward() split by batch × head over
// the calling thread's WASM executor and threads − 1 workers of the shared WorkerPool (pool.js).
// Whether a call comes here is dispatch.js's decision; this file waits for the workers to start,
// splits, runs and joins.
import { SPLIT_PROJECTION_FLOPS, forwardFlops } from '../base/cost_model.js';
import { DisposedError } from '../base/errors.js';
import { weightsPerBatch } from '../base/call_plan.js';
import { sliceBatch, splitWork } from './pool.js';
import { copyEntry } from '../storage/quantised_entries.js';

let nextModuleId = 1;

export class PoolExecutor {
  #config;
  #wasm;
  #pool = null;
  #keepAlive;
  #id = nextModuleId++;
  #threads;
  #makePool;
  #ready = null;
  #isReady = false;
  #disposed = false;
  // What the workers load when the pool starts: null (nothing loaded yet), 'core' (read back
  // from the calling thread's core then) or copies of the last loaded state dict's entries.
  #pending = null;
  #startTimer = null;      // startSoon()'s cancel function, until its start runs

  /**
   * wasm: the calling thread's WasmExecutor (it computes the first share of every call).
   * makePool(): the shared WorkerPool; threads: workers used + 1. keepAlive: someone will wait for
   * the workers to start (explicit threads), so they keep Node alive meanwhile; those start now.
   * Without it ('auto') nothing starts until start(), at the first call big enough for the pool:
   * a process whose calls are all small (or that makes a module and exits) never pays for workers,
   * and a cold start's create() does not spawn one.
   */
  constructor(wasm, config, { threads, makePool, keepAlive }) {
    this.#config = config;
    this.#wasm = wasm;
    this.#threads = threads;
    this.#makePool = makePool;
    this.#keepAlive = keepAlive;
    if (keepAlive) this.start();
  }

  /** Attaches this module to the pool, once: its workers start and get the loaded state dict. */
  start() {
    if (this.#pool || this.#disposed) return;
    this.#pool = this.#makePool();
    const module = { config: this.#config, coreConfig: this.#wasm.coreConfig };
    this.#ready = this.#pool.attach(this.#id, module, this.#threads - 1, this.#keepAlive)
      .then(() => { this.#isReady = true; }, () => {});
    const pending = this.#pending === 'core' ? this.#wasm.readStateDict() : this.#pending;
    if (pending) this.#pool.load(this.#id, pending, { owned: true });
    this.#pending = null;
  }

  /**
   * Starts the workers once the current task is over ('auto', at its first call big enough for
   * them): that call runs on the calling thread anyway, and spawning workers while it runs would
   * delay its result (the spawn itself, and the workers' start-up competing for the cores with
   * it and with V8 optimising the WASM code it runs: a cold start's first call). The wait does not
   * keep Node alive: a process that exits after its first call never starts them.
   */
  startSoon() {
    if (this.#pool || this.#startTimer || this.#disposed) return;
    const start = () => {
      this.#startTimer = null;
      this.start();
    };
    // Node's setImmediate: its first setTimeout cost a cold start's first call ~1 ms of compiling
    // Node's own timer code. Browsers have no setImmediate, and a cheap setTimeout.
    if (typeof setImmediate === 'function') {
      const immediate = setImmediate(start);
      immediate.unref?.();
      this.#startTimer = () => clearImmediate(immediate);
    } else {
      const timer = setTimeout(start, 0);
      this.#startTimer = () => clearTimeout(timer);
    }
  }

  /** True once start() or startSoon() has run. */
  get started() {
    return this.#pool !== null || this.#startTimer !== null;
  }

  /** False once the pool has failed (or this module was disposed): calls go elsewhere. */
  get working() {
    return !this.#pool?.failure && !this.#disposed;
  }

  /** True once every worker has this module. */
  get isReady() {
    return this.#isReady;
  }

  /** Settles when the workers have this module, or have failed (then `working` is false). */
  get ready() {
    return this.#ready;
  }

  get threads() {
    return this.#threads;
  }

  /** Sends the checked entries to the workers (the calling thread's executor has them already). */
  loadStateDict(entries) {
    if (this.#pool) {
      this.#pool.load(this.#id, entries);
    } else if (this.#config.weightsDtype === 'float32') {
      // float32 weights come back from the calling thread's core exactly, when the workers start:
      // no copy of them (4 MB at (512, 8): ~2.5 ms of a cold start's loadStateDict) is kept for
      // workers that may never start.
      this.#pending = 'core';
    } else {
      // Copied, as the WASM core copies: the caller may reuse its arrays before the pool starts.
      // (The core's 16-bit and int8 weights are rounded: the workers get what the caller gave.)
      this.#pending = entries.map(copyEntry);
    }
  }

  /**
   * A call routed here before the workers are up (explicit threads) waits for them, its plan
   * holding copies of its inputs; if they failed to start, the calling thread computes it.
   */
  async forward(plan) {
    if (!this.#isReady) {
      await this.#ready;
      this.#live();
      if (!this.working) return this.#wasm.forward(plan);
    }
    // The shares' outputs are joined here: the caller's `out` is written once, by api.js's results().
    plan = { ...plan, out: null };
    const config = this.#config;
    const pool = this.#pool;
    const id = this.#id;
    // Heads are split in whole K/V groups: a group's query heads share its K and V (the core runs
    // them together).
    const group = config.numHeads / config.numKvHeads;
    const tasks = splitWork(plan.B, config.numKvHeads, this.#threads)
      .map((t) => ({ ...t, h0: t.h0 * group, h1: t.h1 * group }));
    const flops = forwardFlops(plan, config);  // each task's budget counts the whole call: generous
    const results = await this.#fanOut(tasks,
      (task, i) => pool.run(i, id, task, sliceBatch(plan, config, task.b0, task.b1), flops),
      (task) => this.#wasm.runTask(sliceBatch(plan, config, task.b0, task.b1), task));
    if (tasks[0].h0 === 0 && tasks[0].h1 === config.numHeads) return this.#joinBatches(plan, tasks, results);

    // Head ranges: gather the heads, then the output projection, split by rows when it is big
    // enough to pay for one more round trip.
    const { heads, weights } = this.#gatherHeads(plan, tasks, results);
    const rows = plan.B * plan.L, width = config.numHeads * config.valueHeadDim;
    const parts = 2 * rows * width * config.embedDim >= SPLIT_PROJECTION_FLOPS ? Math.min(this.#threads, rows) : 1;
    const ranges = Array.from({ length: parts }, (_, i) => [Math.floor((i * rows) / parts), Math.floor(((i + 1) * rows) / parts)]);
    const slice = ([r0, r1]) => heads.subarray(r0 * width, r1 * width);
    const outputs = await this.#fanOut(ranges,
      (range, i) => pool.project(i, id, slice(range), range[1] - range[0], 2 * (range[1] - range[0]) * width * config.embedDim).then((r) => r.output),
      (range) => this.#wasm.projectOutput(slice(range), range[1] - range[0]));
    if (parts === 1) return { output: outputs[0], weights };
    const output = new Float32Array(rows * config.embedDim);
    ranges.forEach(([r0], i) => output.set(outputs[i], r0 * config.embedDim));
    return { output, weights };
  }

  /** Detaches from the pool (the calling thread's executor is the dispatcher's to dispose). */
  dispose() {
    this.#disposed = true;
    this.#pending = null;
    this.#startTimer?.();
    this.#startTimer = null;
    this.#pool?.detach(this.#id);
  }

  // Runs items[1..] on the workers (remote(item, workerIndex) → promise) and items[0] here
  // meanwhile; resolves to every result in order once all are in, or throws the first error.
  async #fanOut(items, remote, local) {
    const jobs = items.slice(1).map((item, i) => remote(item, i));
    let mine;
    let mineError = null;
    try {
      mine = local(items[0]);
    } catch (e) {
      mineError = e;
    }
    const settled = await Promise.allSettled(jobs);
    if (mineError) throw mineError;
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    this.#live();
    return [mine, ...settled.map((r) => r.value)];
  }

  #live() {
    if (this.#disposed) throw new DisposedError('MultiHeadAttention.forward: the module was disposed during the call');
  }

  #newWeights(plan) {
    return plan.needWeights ? new Float32Array(plan.B * weightsPerBatch(plan, this.#config.numHeads)) : null;
  }

  // Tasks with every head of batches [b0, b1): their output rows and weights go in place.
  #joinBatches(plan, tasks, results) {
    const config = this.#config;
    const { L } = plan;
    const output = new Float32Array(plan.B * L * config.embedDim);
    const weights = this.#newWeights(plan);
    const perBatch = weightsPerBatch(plan, config.numHeads);
    tasks.forEach((t, i) => {
      output.set(results[i].output, t.b0 * L * config.embedDim);
      if (weights) weights.set(results[i].weights, t.b0 * perBatch);
    });
    return { output, weights };
  }

  // Tasks with a head range: heads into [B·L, h·d_v]; per-head weights in place, averaged ones
  // are shares that add up.
  #gatherHeads(plan, tasks, results) {
    const { L, S } = plan;
    const H = this.#config.numHeads, dv = this.#config.valueHeadDim, LS = L * S, width = H * dv;
    const heads = new Float32Array(plan.B * L * width);
    const weights = this.#newWeights(plan);
    tasks.forEach((t, i) => {
      const n = t.h1 - t.h0, w = n * dv;
      const part = results[i].heads;
      for (let r = 0, rows = (t.b1 - t.b0) * L; r < rows; r++) {
        heads.set(part.subarray(r * w, (r + 1) * w), (t.b0 * L + r) * width + t.h0 * dv);
      }
      const pw = results[i].weights;
      if (!weights) return;
      if (plan.averageAttnWeights) {
        for (let j = 0, at = t.b0 * LS; j < pw.length; j++) weights[at + j] += pw[j];
      } else {
        for (let b = 0; b < t.b1 - t.b0; b++) weights.set(pw.subarray(b * n * LS, (b + 1) * n * LS), ((t.b0 + b) * H + t.h0) * LS);
      }
    });
    return { heads, weights };
  }
}
