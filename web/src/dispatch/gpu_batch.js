// The public GpuBatch (README "Tensors on the GPU", docs/webgpu/steps.md#one-submit-per-step): forward()
// calls with `{ output: 'gpu-buffer', batch }` are recorded into one GPUCommandEncoder of the
// batch instead of each submitting its own, and batch.submit() submits them together, so that a
// decode step through a stack of layers is one queue.submit(). WebGPU runs a queue's work in the
// order it was submitted, and the passes of one command buffer in the order they were encoded, so
// the results equal the per-call path's bit for bit.
//
// A call's forward() resolves once its work is encoded (its GpuTensors hold their values from the
// submit on); what only the submit can tell (a GPU input destroyed, or of another device) rejects
// submit(), as a typed error naming the call and its argument. The rules that keep that exact:
//   - a module's per-call buffers (uniforms, uploaded host inputs) are the module's own, written by
//     queue.writeBuffer() before the submit: a second call of the same module in one batch would
//     overwrite the first's, so the batch submits what it holds first (two submits, same results);
//   - a cached call's length advances when it is encoded (the next call on that cache is planned on
//     it); when the submit fails, every cache of the batch goes back to its length before the batch;
//   - a cached call of several passes (a step longer than a windowed cache's pass) submits what the
//     batch holds, then its own passes (each pass rewrites the module's per-call buffers), after a
//     copy of the cache's storage: its forward() settles as an unbatched call's does, and it stays
//     the batch's call, so that a submit that fails destroys its results too and puts its storage
//     back from that copy (a ring's slots its passes overwrote);
//   - the caller's own work (encode()) goes on a command encoder of its own, finished after fn()
//     and put in the batch's list of command buffers after those of the calls before it; the next
//     call starts a new encoder after it. One queue.submit() of the list runs them in that order.
import { BackendError, DisposedError, OptionError, WebAttentionError } from '../base/errors.js';
import { BATCH, CACHE } from '../base/batch_protocol.js';
import { inScopes } from '../base/error_scopes.js';
import { isModuleDevice } from '../base/module_devices.js';
import { OpenPass } from '../webgpu/open_pass.js';

// GpuBatch's brand check (isGpuBatch() below), set by the class's static block.
let hasBatchBrand;

export class GpuBatch {
  static {
    hasBatchBrand = (value) => #calls in value;
  }

  #device = null;
  #encoder = null;        // an OpenPass over the encoder the calls are recorded into
  #finished = [];         // command buffers ahead of #encoder's, in order: encode()'s, and the calls' before it
  #inEncode = false;      // encode()'s fn() is running
  #members = new Set();   // the executors with work in #encoder
  #calls = [];            // what is recorded since the last submit(): see record()
  #submits = [];          // [scope promises] of each queue.submit() since the last submit()
  #after = [];            // afterSubmit()'s, run once the recorded calls are submitted
  #outcomes = new Map();  // generation → its submit()'s promise, while it runs, and for good when it failed
  #generation = 0;        // submit() count: which submit a recorded call's results wait for
  #held = new Set();      // the modules with calls recorded since the last submit() (hold())
  #unreported = null;     // the promise of a submit the package made (whenSubmitted()), for the caller's next submit()

  /** How many calls (forward() and encode()) are recorded and not yet submitted. */
  get pending() {
    return this.#calls.length;
  }

  /**
   * Internal (the WebGPU executor's): what `owner`'s call on `device` is recorded into, an OpenPass
   * (webgpu/open_pass.js) over the batch's encoder: its dispatches go in the pass the calls before
   * it left open, other work on the encoder. A call of a module already in the batch first submits
   * what the batch holds (its per-call buffers are written again by this call). An OptionError
   * naming `batch` for another device.
   */
  [BATCH.recorderFor](owner, device) {
    if (this.#device && this.#device !== device) {
      throw new OptionError("batch: its calls are on another GPUDevice than this module's; a batch is one device's queue", {
        argument: 'batch', expected: "the module's GPUDevice", actual: 'another GPUDevice',
      });
    }
    this.#device = device;
    if (this.#members.has(owner)) this.#submitEncoder();
    this.#members.add(owner);
    this.#encoder ??= new OpenPass(device.createCommandEncoder({ label: 'webattention batch' }));
    return this.#encoder;
  }

  /**
   * Internal (webgpu/forward_pass.js): where a call's uniform slots of `bytes` go, or null: each
   * call writes its own (a GpuStep keeps its calls' in buffers of its own).
   */
  [BATCH.uniformRegion](bytes) {
    return null;
  }

  /**
   * Internal (MultiHeadAttention.forward()): `module` has a call in the batch, so it is held until
   * the submit: a module the app dropped is disposed once collected (api.js), which would destroy
   * buffers the recorded work reads.
   */
  [BATCH.hold](module) {
    this.#held.add(module);
  }

  /** Internal: what must be written before each queue.submit() of the batch (a GpuStep's uniforms). */
  [BATCH.beforeSubmit]() {}

  /**
   * Records the caller's own GPU work into the batch, between the calls recorded before and after
   * it: fn(encoder) encodes passes and copies on a new GPUCommandEncoder of `device` (the device of
   * the batch's modules), synchronously, and must not end it; the batch finishes it and submits it
   * with the calls, in recording order, in the same queue.submit(). So a model's own kernels (a
   * norm, an MLP, a residual add) between its attention layers keep a decode step one submit, and
   * read the batched results before them. Returns what fn returned. A throw from fn is rethrown and
   * records nothing; so is a promise returned (OptionError naming `fn`: work encoded after an await
   * would find the encoder finished). Work WebGPU refuses (a pass left open, a destroyed buffer)
   * rejects submit() as a call's does, naming this call. `queue.writeBuffer()` from fn is not
   * ordered by the batch: it takes effect before the batch runs.
   */
  encode(device, fn) {
    if (!isModuleDevice(device)) {
      throw new OptionError('device: expected the GPUDevice of a webattention module (create() with backend \'webgpu\' or its gpu option), '
        + `got ${device === null || typeof device !== 'object' ? String(device) : 'another object'}`, {
        argument: 'device', expected: "a webattention module's GPUDevice", actual: typeof device,
      });
    }
    if (this.#device && this.#device !== device) {
      throw new OptionError("device: another GPUDevice than the batch's calls'; a batch is one device's queue", {
        argument: 'device', expected: "the batch's GPUDevice", actual: 'another GPUDevice',
      });
    }
    if (typeof fn !== 'function') {
      throw new OptionError(`fn: expected a function (encoder) => void, got ${typeof fn}`, { argument: 'fn', expected: 'function', actual: typeof fn });
    }
    if (this.#inEncode) {
      throw new OptionError("fn: encode() from inside the batch's encode() fn: its work would run ahead of the outer fn's", {
        argument: 'fn', expected: 'no encode() during encode()', actual: 'a nested encode()',
      });
    }
    const encoder = device.createCommandEncoder({ label: 'webattention batch: encode()' });
    let value;
    this.#inEncode = true;
    try {
      value = fn(encoder);
    } finally {
      this.#inEncode = false;
    }
    if (typeof value?.then === 'function') {
      throw new OptionError('fn: encode() runs fn synchronously; it returned a promise, and work after an await would find its encoder '
        + 'finished; nothing of it was recorded', { argument: 'fn', expected: 'a synchronous function', actual: 'a promise' });
    }
    this.#device = device;
    if (this.#encoder) this.#finished.push(this.#encoder.encoder().finish());
    this.#encoder = null;
    this.#calls.push(callerWork(device, encoder, this.#finished));
    return value;
  }

  /**
   * Internal (checks/plans.js, at the call): refuses a call the batch cannot hold, a typed error
   * naming `batch`; a GpuBatch holds any (a GpuStep has rules: dispatch/gpu_step.js). `what` names
   * the call ('forward()', 'scaledDotProductAttention()').
   */
  [BATCH.admit](plan, what) {}

  /**
   * Internal: a call recorded into recorderFor()'s encoder (or submitted after submitHeld()). call:
   * { scopes (its encoding's error scopes, popped), refused() (resolves to the typed error of its
   * GPU input WebGPU refused, or null), undo() (its cache back to the length before it), destroy()
   * (its result buffers), kept() (optional: the batch's work was accepted), kvCache (optional:
   * the KvCache it appends to, told of it: dispatch/batch_hold.js) }. Returns its ticket for
   * whenSubmitted().
   */
  [BATCH.record](call) {
    this.#calls.push(call);
    call.kvCache?.[CACHE.recorded](this, this.#generation);
    return this.#generation;
  }

  /**
   * Internal (a cached call of several passes, which submits its own work): what the encoder holds
   * submitted now, ahead of that work in the queue. The calls stay this submit()'s to validate.
   */
  [BATCH.submitHeld]() {
    if (this.#encoder || this.#finished.length > 0) this.#submitEncoder();
  }

  /**
   * Internal (GpuTensor.read(), and a module's work outside the batch): resolves once the call of
   * `ticket` was submitted, submitting the batch now (synchronously: the queue.submit() happens
   * before this returns) when that has not happened yet; rejects as that submit() did.
   */
  [BATCH.whenSubmitted](ticket) {
    if (ticket === this.#generation) {
      const outcome = this.submit();
      this.#unreported = outcome;
      return outcome;
    }
    return this.#outcomes.get(ticket) ?? Promise.resolve();
  }

  /**
   * Internal (GpuTensor.dispose()): runs fn() once the call of `ticket` was submitted (at once when
   * it was): a result a later call of the batch reads must outlive the submit.
   */
  [BATCH.afterSubmit](ticket, fn) {
    if (ticket === this.#generation) this.#after.push(fn);
    else fn();
  }

  /**
   * Internal (api/attention_engines.js, which holds an engine whose buffers recorded work reads):
   * runs fn() once what the batch holds now is submitted (at once when it holds nothing).
   */
  [BATCH.afterPending](fn) {
    if (this.#calls.length > 0) this.#after.push(fn);
    else fn();
  }

  /**
   * Submits the calls recorded since the last submit() (one queue.submit(), or one more per module
   * called twice) before it returns, and resolves once WebGPU has validated them; nothing
   * recorded: resolves at once, or, after a submit the package made for work outside the batch (a
   * read() of its result, a call on its cache), as that submit does, so that the caller learns of
   * its calls' refusal. Rejects with a BackendError naming the call (its index among them) and its
   * argument when WebGPU refused the work; those calls' results are destroyed and their caches put
   * back.
   */
  submit() {
    const unreported = this.#unreported;
    this.#unreported = null;
    if (unreported && this.#calls.length === 0) return unreported;
    const generation = this.#generation++;
    if (this.#encoder || this.#finished.length > 0) this.#submitEncoder();
    const calls = this.#calls;
    const submits = this.#submits;
    this.#calls = [];
    this.#submits = [];
    this.#held.clear();
    for (const fn of this.#after.splice(0)) fn();
    if (calls.length === 0) return Promise.resolve();
    // Kept while it runs, and for good when it failed (its results' read() rejects with it).
    const outcome = this.#validated(calls, submits);
    this.#outcomes.set(generation, outcome);
    outcome.then(() => this.#outcomes.delete(generation), () => {});
    tellCaches(this, calls, outcome);
    return outcome;
  }

  /**
   * Internal (GpuStep.replay() after a failure part way, GpuStep.dispose()): what the batch holds is
   * dropped unsubmitted, its calls undone (their caches back) and their results destroyed; their
   * read() rejects with `reason` (else a DisposedError naming `batch`).
   */
  [BATCH.discard](reason = null) {
    const calls = this.#calls.splice(0);
    for (const call of [...calls].reverse()) call.undo();
    for (const call of calls) call.destroy();
    this.#encoder = null;
    this.#finished = [];
    this.#members.clear();
    this.#submits = [];
    this.#held.clear();
    const generation = this.#generation++;
    tellCaches(this, calls, null);
    if (calls.length > 0) {
      const dropped = Promise.reject(reason ?? new DisposedError('batch: its calls were dropped before their submit', 'batch'));
      dropped.catch(() => {});
      this.#outcomes.set(generation, dropped);  // for good, as a refused submit's
    }
    for (const fn of this.#after.splice(0)) fn();
  }

  // Resolves once every error scope of `calls` and of their `submits` settled; else the error.
  async #validated(calls, submits) {
    const failures = await Promise.all([...calls.flatMap((c) => c.scopes), ...submits.flat()]);
    const failure = failures.find(Boolean);
    if (!failure) {
      for (const call of calls) call.kept?.();
      return;
    }
    let error = null;
    for (const [index, call] of calls.entries()) {
      error = await call.refused().catch(() => null);
      if (error) {
        error = new BackendError(`batch: call ${index} of the ${this[BATCH.replayable] ? 'step' : 'batch'}: ${error.message}`, {
          argument: error.argument, expected: error.expected, actual: error.actual,
        });
        break;
      }
    }
    for (const call of [...calls].reverse()) call.undo();
    for (const call of calls) call.destroy();
    if (error instanceof WebAttentionError) throw error;
    throw new BackendError(`batch: WebGPU refused the batch's work (${failure.message}); its results were destroyed`, {
      argument: 'batch', expected: 'work WebGPU accepts', actual: failure.message,
    });
  }

  // The finished command buffers and the encoder's work submitted now, in order (error scopes
  // around the finish and the submit, awaited by submit()); the next call starts a new encoder.
  #submitEncoder() {
    const device = this.#device;
    const buffers = this.#finished.splice(0);
    const encoder = this.#encoder;
    this.#submits.push(inScopes(device, () => {
      if (encoder) buffers.push(encoder.encoder().finish());
      this[BATCH.beforeSubmit]();
      device.queue.submit(buffers);
    }));
    this.#encoder = null;
    this.#members.clear();
  }
}

// Each KvCache that `calls` (of `batch`) append to told that their submit's verdict is `outcome`
// (null: they were dropped, and undone): its work from outside the batch waits for it
// (dispatch/batch_hold.js).
function tellCaches(batch, calls, outcome) {
  const told = new Set();
  for (const { kvCache } of calls) {
    if (!kvCache || told.has(kvCache)) continue;
    told.add(kvCache);
    kvCache[CACHE.submitted](batch, outcome);
  }
}

// encode()'s record (as record()'s calls): the caller's encoder finished into `finished` in error
// scopes, which tell submit() whether WebGPU refused that work; it has no cache or result.
function callerWork(device, encoder, finished) {
  const scopes = inScopes(device, () => finished.push(encoder.finish()));
  const refused = async () => {
    const error = (await Promise.all(scopes)).find(Boolean);
    return error ? new BackendError(`fn: WebGPU refused the work encode()'s fn encoded (${error.message})`, {
      argument: 'fn', expected: 'work WebGPU accepts', actual: error.message,
    }) : null;
  };
  return { scopes, refused, undo() {}, destroy() {} };
}

/**
 * Whether `value` is a GpuBatch this package made (forward()'s `batch` option): a brand check on a
 * private field, so a Proxy of one or an Object.create(GpuBatch.prototype) is not one (instanceof
 * says it is, and its first private read would then throw an untyped TypeError mid-call).
 */
export const isGpuBatch = (value) => value !== null && typeof value === 'object' && hasBatchBrand(value);
