// The worker pool: a module with threads > 1 runs its forward() on several single-threaded WASM
// instances at once, with no SharedArrayBuffer (so no cross-origin isolation is needed).
//
// One pool per loaded WASM module (SIMD or scalar) serves every module made with threads > 1.
// Each worker instantiates the compiled WebAssembly.Module the calling thread posted to it once,
// builds each module's MultiHeadAttention and receives every state dict loadStateDict() loads. A
// forward() is split by batch × head into at most `threads` tasks; the calling thread computes
// the first itself, workers 0 … threads − 2 one each, from their own copies of the inputs
// (transferred, not shared). Tasks holding every head of their batches return output rows; tasks
// holding a head range return those heads' outputs, which the calling thread gathers and
// projects (W_O), split by rows over the same threads when that is big enough.
//
// A worker that crashes, exits or fails to start rejects the calls it was part of with a
// WorkerError; the pool is then shut down and its modules carry on on the calling thread.
import { DisposedError, WorkerError, errorFromData } from '../base/errors.js';
import { workerAnswerMs } from '../base/cost_model.js';
import { planWithCopies } from '../base/call_plan.js';
import { warnOnce } from '../base/warn_once.js';
import { copyEntry } from '../storage/quantised_entries.js';

/**
 * Test seams: onPool(pool) sees each pool made; beforeRun(pool, worker, message) each task
 * posted; answerMs(ms), when set, replaces each request's answer budget (workerAnswerMs);
 * spawnWorker(variant), when set, makes the workers instead of the platform.
 */
// How long an unawaited worker start waits (see #startLater()): longer than an ending process
// takes to end on a loaded machine (10 ms was not, at a load average of 13 on two cores).
const UNAWAITED_START_MS = 50;

export const testHooks = { onPool: null, beforeRun: null, answerMs: null, spawnWorker: null };

/**
 * Splits B × H (batch, head) pairs into at most `count` tasks { b0, b1, h0, h1 }: a grid of batch
 * ranges × head ranges whose largest task is smallest; on a tie, more batch ranges (a task with
 * every head needs no gathering). Either every task has all heads or every task has a head range.
 */
export function splitWork(B, H, count) {
  let best = null;
  for (let nb = 1; nb <= Math.min(B, count); nb++) {
    const nh = Math.min(H, Math.floor(count / nb));
    const size = Math.ceil(B / nb) * Math.ceil(H / nh);
    if (!best || size < best.size || (size === best.size && nb > best.nb)) best = { nb, nh, size };
  }
  const tasks = [];
  for (let i = 0; i < best.nb; i++) {
    for (let j = 0; j < best.nh; j++) {
      tasks.push({
        b0: Math.floor((i * B) / best.nb), b1: Math.floor(((i + 1) * B) / best.nb),
        h0: Math.floor((j * H) / best.nh), h1: Math.floor(((j + 1) * H) / best.nh),
      });
    }
  }
  return tasks;
}

/** The plan of batches [b0, b1): views on the same data, masks and position ids sliced alike. */
export function sliceBatch(plan, config, b0, b1) {
  if (b0 === 0 && b1 === plan.B) return plan;
  const views = new Map();  // one view per array, so that query === key === value stays true
  const rows = (data) => {
    if (!views.has(data)) {
      const per = data.length / plan.B;
      views.set(data, data.subarray(b0 * per, b1 * per));
    }
    return views.get(data);
  };
  const n = b1 - b0;
  const kpm = plan.keyPaddingMask, am = plan.attnMask;
  return {
    ...plan,
    B: n,
    query: rows(plan.query), key: rows(plan.key), value: rows(plan.value),
    keyPaddingMask: kpm.data ? { ...kpm, data: rows(kpm.data), shape: [n, plan.S] } : kpm,
    // [L, S] is shared by every batch; [B·h, L, S] is sliced by batch.
    attnMask: am.data && am.shape.length === 3
      ? { ...am, data: rows(am.data), shape: [n * config.numHeads, plan.L, plan.S] } : am,
    positionIds: plan.positionIds && rows(plan.positionIds),
  };
}

/** The fields of a plan a worker needs, as fresh copies it can own: { plan, transfer }. */
function postable(plan) {
  const { plan: copy, buffers } = planWithCopies(plan);
  const mask = (m) => ({ kind: m.kind, data: m.data, shape: m.shape });
  return {
    plan: {
      B: copy.B, L: copy.L, S: copy.S,
      query: copy.query, key: copy.key, value: copy.value,
      keyPaddingMask: mask(copy.keyPaddingMask), attnMask: mask(copy.attnMask),
      isCausal: copy.isCausal, needWeights: copy.needWeights, averageAttnWeights: copy.averageAttnWeights,
      positionIds: copy.positionIds,
    },
    transfer: buffers,
  };
}

/**
 * The workers of one loaded WASM module, shared by every module (MultiHeadAttention) made with
 * threads > 1: a module with n threads uses workers 0 … n − 2, and each worker holds one WASM
 * instance with one MultiHeadAttention per module using it. spawnWorker(variant) gives an
 * endpoint (or a promise of one): post(message, transfer), onMessage(fn), onFailure(fn(reason)), terminate(), and
 * optionally ref()/unref() (an idle worker never keeps Node alive). The workers stop when the
 * last module detaches, or all at once when one fails (`failure` then says why, and every module
 * using the pool carries on on its calling thread).
 */
export class WorkerPool {
  #spawnWorker;
  #module;
  #variant;
  #workers = [];
  #modules = new Map();  // module id → workers it uses
  #nextId = 1;
  #failure = null;
  #closed = false;

  constructor({ spawnWorker, module, variant }) {
    this.#spawnWorker = spawnWorker;
    this.#module = module;
    this.#variant = variant;
    testHooks.onPool?.(this);
  }

  /** Why the pool stopped (a WorkerError), or null while it works. */
  get failure() {
    return this.#failure;
  }

  /** True once the pool has stopped (failed, or its last module detached): make a new one. */
  get closed() {
    return this.#closed;
  }

  /**
   * Makes module `id` ({ config, coreConfig }: its resolved config, and the core's words for it)
   * on workers 0 … count − 1, spawning those missing. Resolves once they all have it; rejects if
   * a worker fails. keepAlive: someone will wait.
   */
  attach(id, { config, coreConfig }, count, keepAlive) {
    while (this.#workers.length < count) this.#workers.push(this.#spawn(this.#workers.length));
    this.#modules.set(id, count);
    const ready = Promise.all(this.#workers.slice(0, count).map((w) => this.#request(w, id, { type: 'create', config, coreConfig }, [], keepAlive)));
    ready.catch(() => {});  // failures also reach every caller through `failure`
    return ready;
  }

  /** Drops module `id` from its workers (its waiting calls reject); the last one stops them. */
  detach(id) {
    const count = this.#modules.get(id);
    if (count === undefined) return;
    this.#modules.delete(id);
    const error = new DisposedError('MultiHeadAttention.forward: the module was disposed during the call');
    if (this.#modules.size === 0) {
      this.#closed = true;
      for (const w of this.#workers) this.#stop(w, error);
      return;
    }
    for (const w of this.#workers.slice(0, count)) {
      for (const [jobId, job] of w.pending) if (job.mhaId === id) this.#settle(w, jobId).reject(error);
      this.#request(w, id, { type: 'dispose' }).catch(() => {});
    }
  }

  /**
   * Sends module `id`'s workers their own copy of the checked state-dict entries ([{ name, data,
   * dtype }]). owned: the entries are copies nobody else holds, so the first worker takes them as
   * they are.
   */
  load(id, entries, { owned = false } = {}) {
    for (const [i, w] of this.#workers.slice(0, this.#modules.get(id) ?? 0).entries()) {
      const copies = owned && i === 0 ? entries : entries.map(copyEntry);
      this.#request(w, id, { type: 'load', entries: copies }, copies.map((e) => e.data.buffer)).catch((e) => {
        // Not when the module was disposed meanwhile: that is no fault of the worker.
        if (this.#modules.has(id)) this.#fail(`could not load the state dict (${e.message})`, w.index);
      });
    }
  }

  /**
   * Runs one task of module `id` on worker `index`; resolves to { output | heads, weights }.
   * flops: the task's work, for its answer budget (workerAnswerMs).
   */
  run(index, id, task, plan, flops) {
    const w = this.#workers[index];
    const { plan: copy, transfer } = postable(plan);
    const message = { type: 'run', task, plan: copy };
    testHooks.beforeRun?.(this, w.endpoint, message);
    return this.#request(w, id, message, transfer, true, flops);
  }

  /** Module `id`'s output projection of `rows` gathered head rows on worker `index`: { output }. */
  project(index, id, heads, rows, flops) {
    const copy = heads.slice();
    return this.#request(this.#workers[index], id, { type: 'project', heads: copy, rows }, [copy.buffer], true, flops);
  }

  /** Bytes in use on each worker's WASM heap (leak checks). */
  memoryInUse() {
    return Promise.all(this.#workers.map((w) => this.#request(w, 0, { type: 'memory' }, [], true).then((r) => r.bytes)));
  }

  // A worker starts after the current task (macrotask), so that create(), loadStateDict() and a
  // first forward() in one go are not slowed down by its start; messages wait for it meanwhile.
  #spawn(index) {
    const w = { index, endpoint: null, queue: [], pending: new Map(), keepAlive: 0, watchdog: null, startTimer: null };
    this.#startLater(w, UNAWAITED_START_MS);
    this.#request(w, 0, { type: 'init', module: this.#module, variant: this.#variant }).catch(() => {});
    return w;
  }

  // While nobody waits for the worker, its start waits on a timer that does not keep Node alive,
  // long enough for a process that is ending anyway (its first call was its last) to end first:
  // a worker started then would hold its exit up by its own start. Once someone waits, at once.
  #startLater(w, ms) {
    clearTimeout(w.startTimer);
    w.startTimer = setTimeout(() => {
      w.startTimer = null;
      this.#start(w);
    }, ms);
    if (ms > 0) w.startTimer.unref?.();
  }

  async #start(w) {
    if (this.#closed) return;
    let endpoint;
    try {
      endpoint = await (testHooks.spawnWorker ?? this.#spawnWorker)(this.#variant);
    } catch (e) {
      // No Worker support, or a blocked script: nothing to run on, the modules fall back.
      this.#fail(`could not be started (${e?.message ?? e})`, w.index);
      return;
    }
    if (this.#closed) {  // stopped while the platform made it (Node's spawn is async)
      endpoint.terminate();
      return;
    }
    w.endpoint = endpoint;
    w.endpoint.onMessage((m) => this.#receive(w, m));
    w.endpoint.onFailure((reason) => this.#fail(reason, w.index));
    if (w.keepAlive === 0) w.endpoint.unref?.();  // after onMessage: Node's 'message' listener refs
    for (const [message, transfer] of w.queue) this.#post(w, message, transfer);
    w.queue = null;
  }

  #post(w, message, transfer) {
    if (!w.endpoint) {
      w.queue.push([message, transfer]);
      return;
    }
    try {
      w.endpoint.post(message, transfer);
    } catch (e) {
      this.#receive(w, { id: message.id, fatal: `could not be sent a message (${e?.message ?? e})` });
    }
  }

  // Posts a message and resolves to the answer. While a request someone waits for (keepAlive)
  // is out, the worker keeps Node alive; otherwise it never does. flops: the request's work, for
  // its answer budget.
  #request(w, mhaId, message, transfer = [], keepAlive = false, flops = 0) {
    if (this.#closed) {
      return Promise.reject(this.#failure ?? new DisposedError('the worker pool was stopped: its last module was disposed'));
    }
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      if (keepAlive && w.keepAlive++ === 0) {
        if (w.endpoint) w.endpoint.ref?.();
        else if (w.startTimer) this.#startLater(w, 0);
      }
      const budgetMs = testHooks.answerMs?.(workerAnswerMs(flops)) ?? workerAnswerMs(flops);
      w.pending.set(id, { resolve, reject, mhaId, keepAlive, budgetMs });
      if (w.pending.size === 1) this.#watch(w);
      this.#post(w, { ...message, id, mhaId }, transfer);
    });
  }

  // Removes and returns a waiting job; the next one's budget starts now.
  #settle(w, id) {
    const job = w.pending.get(id);
    w.pending.delete(id);
    if (job.keepAlive && --w.keepAlive === 0) w.endpoint?.unref?.();
    this.#watch(w);
    return job;
  }

  // Arms the worker's watchdog for its oldest waiting request (it answers in order), or disarms
  // it when none waits. A worker past the budget is taken for hung: the pool fails.
  #watch(w) {
    clearTimeout(w.watchdog);
    w.watchdog = null;
    const oldest = w.pending.values().next().value;
    if (!oldest || this.#closed) return;
    w.watchdog = setTimeout(() => this.#fail(`did not answer within ${(oldest.budgetMs / 1000).toFixed(1)} s`, w.index), oldest.budgetMs);
    w.watchdog.unref?.();  // the worker itself keeps Node alive while someone waits
  }

  #receive(w, message) {
    if (!w.pending.has(message.id)) return;
    const job = this.#settle(w, message.id);
    if (message.fatal) {
      job.reject(this.#fail(message.fatal, w.index));
    } else if (message.error) {
      job.reject(errorFromData(message.error));
    } else {
      job.resolve(message);
    }
  }

  // The pool is unusable from here on: every waiting call rejects, every worker stops.
  #fail(reason, index) {
    if (this.#closed) return this.#failure;
    this.#closed = true;
    this.#failure = new WorkerError(
      `worker ${index + 1} of ${Math.max(this.#workers.length, index + 1)} ${reason}; `
        + 'the module carries on on the calling thread alone (threads = 1)',
      { argument: 'threads', expected: 'working workers', actual: String(reason) });
    for (const w of this.#workers) this.#stop(w, this.#failure);
    // Said once: the calls go on, correct but on one thread, which a user would not see otherwise.
    warnOnce('worker-pool', `webattention: ${this.#failure.message}. Check that the pool worker script `
      + `(${this.#variant}) can be served to a Worker, or where it is with configure({ wasmPaths })`);
    return this.#failure;
  }

  #stop(w, error) {
    clearTimeout(w.watchdog);
    for (const job of w.pending.values()) job.reject(error);
    w.pending.clear();
    try {
      w.endpoint?.terminate();
    } catch { /* already gone */ }
  }
}
