// The public GpuStep (docs/webgpu/steps.md#one-submit-per-step, "A step recorded once"):
// a GpuBatch that keeps the calls of its first step, so that every later token runs them again
// with replay() instead of making them: the checks, the routing and the queueing of each forward()
// are not paid again, nor its encoding, where its tape plays (webgpu/step_tape.js: its dispatches
// as last encoded, the cache's length written into them, in one compute pass the calls share; the
// calls' uniforms are the step's, written once a submit: webgpu/step_uniforms.js; about 0.3–0.4×
// a batched step's host time on SwiftShader's Dawn, bench/gpu/gpu_decode_stack.mjs's "replayed"
// rows). The step's buffers are fixed: its forward() calls take GPU inputs and write into `out`
// places, and its encode() work is fn called again, so a replay is the same calls made again at
// each cache's length now (its caches one step on), bit for bit. The recording ends at the first
// submit(), the caller's or one the package makes (a read() of one of its results, work outside
// it on its modules).
//
// A call that could not be replayed is refused when it is made (admit(): a host input, no `out`,
// a mask, positionIds, weights, rows, a scaledDotProductAttention() call); what a replay may do is
// checked before it records anything: no kept call cut into passes (a step longer than a windowed
// cache's pass, known only once it ran), its module and cache alive, room in each cache and in a
// given rotary table.
import { BackendError, CacheError, DisposedError, OptionError, WebAttentionError } from '../base/errors.js';
import { BATCH } from '../base/batch_protocol.js';
import { isDeviceData } from '../base/gpu_tensors.js';
import { GpuBatch } from './gpu_batch.js';
import { checkRoom, checkRotaryRows } from './cache_checks.js';
import { StepUniforms } from '../webgpu/step_uniforms.js';

export class GpuStep extends GpuBatch {
  #recording = true;    // until the first submit(): calls are kept
  #replaying = false;   // replay() records the kept calls again
  #kept = [];           // { call } (a forward()'s record, with plan and again()) or { device, fn } (encode())
  #uniforms = null;     // StepUniforms of the step's device: its calls' uniform slots
  #disposed = false;
  #modules = new Set(); // the modules of the kept calls, held for the replays (hold())
  #ticket = null;       // record()'s ticket of the last call recorded: its submit is the one replay() waits for

  /**
   * Internal (webgpu/step_bound.js keysBound()): this batch's calls are encoded in the form
   * its replays repeat (webgpu/step_tape.js).
   */
  get [BATCH.replayable]() {
    return true;
  }

  /**
   * Internal (checks/plans.js): at the call, a call this step could not replay (replayRefusal()),
   * or any call after its first submit(): OptionError naming `batch`.
   */
  [BATCH.admit](plan, what) {
    this.#checkLive(`a ${what} into it`);
    if (!this.#recording) throw recorded(`a ${what} into it`);
    const why = what === 'forward()' ? replayRefusal(plan) : ENGINE_CALL;
    if (why) {
      throw new OptionError(`batch: a GpuStep replays its calls, and this ${what} could not be replayed: ${why}`, {
        argument: 'batch', expected: REPLAYABLE, actual: why,
      });
    }
  }

  /** Internal: as GpuBatch's; the modules of the recording are held for good (until dispose()). */
  [BATCH.hold](module) {
    if (this.#recording) this.#modules.add(module);
    super[BATCH.hold](module);
  }

  /** Internal: as GpuBatch's; while recording, the call is kept for replay(). */
  [BATCH.record](call) {
    if (this.#recording) this.#kept.push({ call });
    this.#ticket = super[BATCH.record](call);
    return this.#ticket;
  }

  /** Internal: as GpuBatch's; after the first submit() only replay() records. */
  [BATCH.recorderFor](owner, device) {
    this.#checkLive('a forward() into it');
    if (!this.#recording && !this.#replaying) throw recorded('a forward() into it');
    this.#uniforms ??= new StepUniforms(device);
    return super[BATCH.recorderFor](owner, device);
  }

  /**
   * Internal: a region of the step's uniform buffers (webgpu/step_uniforms.js), written at its
   * submits: a replay patches a kept call's and writes them all at once.
   */
  [BATCH.uniformRegion](bytes) {
    return this.#uniforms.region(bytes);
  }

  /** Internal: the step's uniforms written, before each queue.submit(). */
  [BATCH.beforeSubmit]() {
    this.#uniforms?.flush();
  }

  /** As GpuBatch's; while recording, fn is kept and called again by each replay(). */
  encode(device, fn) {
    this.#checkLive('an encode() into it');
    if (!this.#recording) throw recorded('an encode() into it');  // a replay calls GpuBatch's
    const value = super.encode(device, fn);
    if (this.#recording) this.#kept.push({ device, fn });
    return value;
  }

  /** As GpuBatch's; the first ends the recording. */
  submit() {
    if (!this.#replaying) this.#recording = false;
    return super.submit();
  }

  /**
   * Runs the kept calls again, in order, into one queue.submit(), each cache one step on, and
   * resolves once WebGPU accepted them (as submit()). OptionError naming `batch` before the first
   * submit() or for a kept call that cannot be replayed, DisposedError / CacheError naming the
   * module's or cache's problem, OptionError for a replay() while one is recording (await each):
   * nothing is recorded then. A throw from an encode() fn is rethrown with the caches back. Waits
   * for the step's last submit to settle first (a refused one puts the caches back).
   */
  async replay() {
    this.#checkLive('replay()');
    if (this.#recording) {
      throw new OptionError('batch: replay() runs the calls of the step\'s first submit(); record them and submit() first', {
        argument: 'batch', expected: 'a submitted GpuStep', actual: 'still recording',
      });
    }
    if (this.#replaying) {
      throw new OptionError('batch: replay() while a replay() of the step is recording; await each replay()', {
        argument: 'batch', expected: 'one replay() at a time', actual: 'a replay() under way',
      });
    }
    this.#replaying = true;
    try {
      // The last submit settled (the caches where it left them: a refused one puts them back), as
      // whenSubmitted() tells of its calls' ticket; a replay planned before would plan on lengths
      // that are not theirs.
      if (this.#ticket !== null) await this[BATCH.whenSubmitted](this.#ticket).catch(() => {});
      this.#checkLive('replay()');
      const plans = this.#replanned();
      for (const [index, kept] of this.#kept.entries()) {
        if (kept.fn) super.encode(kept.device, kept.fn);  // a throw: fn's own, as it is
        else await recordedAgain(kept.call, plans[index], index);
        this.#checkLive('replay()');  // dispose() while the replay waited: dropped unsubmitted
      }
    } catch (e) {
      this[BATCH.discard](e);
      throw e;
    } finally {
      this.#replaying = false;
      if (this.#disposed) this.#release();
    }
    return super.submit();
  }

  /**
   * Destroys the step's uniform buffers and forgets its calls (their tapes, bind groups and
   * plans), so that a step no longer used holds no GPU memory. What it holds unsubmitted (a
   * recording not yet submitted) is dropped, its caches back, as a refused submit leaves them; a
   * replay() under way stops before its submit and rejects with the DisposedError. Work already
   * submitted runs (WebGPU frees a destroyed buffer after the work that reads it). Then replay()
   * and calls into the step are DisposedErrors naming `batch`; a second dispose() does nothing.
   */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    if (!this.#replaying) this.#release();  // else the replay releases when it stops
  }

  // dispose()'s work, once no replay is recording.
  #release() {
    this[BATCH.discard]();
    this.#uniforms?.destroy();
    this.#uniforms = null;
    this.#kept = [];
    this.#modules.clear();
  }

  // A DisposedError naming `batch` for `what` on a disposed step.
  #checkLive(what) {
    if (this.#disposed) throw new DisposedError(`batch: ${what} on a disposed GpuStep`, 'batch');
  }

  // Each kept forward()'s plan at its cache's length now (the lengths advanced call by call, for a
  // cache two calls share), checked as a call's; null for encode() work.
  #replanned() {
    const lengths = new Map();  // KvCache → its rows' lengths before the next kept call
    return this.#kept.map(({ call }, index) => {
      if (!call) return null;
      const plan = call.plan;
      // admit() refused at the call what its plan shows; a call cut into passes shows only here.
      if (!call.again) {
        throw new OptionError(`batch: call ${index} of the step cannot be replayed: it was cut into passes (longer than its windowed cache's pass)`, {
          argument: 'batch', expected: 'a call of one pass', actual: 'a call cut into passes',
        });
      }
      if (!call.live()) throw new DisposedError(`batch: call ${index} of the step: its module was disposed or its device lost`, 'batch');
      if (!plan.cache) return { ...plan, batch: this };
      const { kvCache, L } = plan.cache;
      const before = lengths.get(kvCache) ?? kvCache.lengthsForCall();
      const n = before[0];
      if (before.some((m) => m !== n)) {
        throw new CacheError(`cache: call ${index} of the step replays on every row at one length; its rows are at ${before.join(', ')}`, {
          argument: 'cache', expected: 'rows at one length', actual: before.join(', '),
        });
      }
      checkRoom(kvCache, n, L, { where: `call ${index} of the step: ` });
      checkRotaryRows(plan.rotaryRows ?? null, n, Math.max(L, plan.S), { where: `call ${index} of the step: ` });
      lengths.set(kvCache, before.map((m) => m + L));
      return { ...plan, batch: this, T: n + L, cache: { ...plan.cache, lengthsBefore: before, lengthBefore: n, lengthAfter: n + L } };
    });
  }
}

// A kept forward() recorded again at `plan` (in its cache's queue), its failure a typed error: the
// device lost, say, is a BackendError naming the call.
async function recordedAgain(call, plan, index) {
  try {
    if (plan.cache) await plan.cache.kvCache.enqueue(plan.cache, () => call.again(plan), false, plan.batch);
    else await call.again(plan);
  } catch (e) {
    if (e instanceof WebAttentionError) throw e;
    throw new BackendError(`batch: call ${index} of the step failed (${e?.message ?? e})`, {
      argument: 'batch', expected: 'a working WebGPU device', actual: e?.message ?? String(e),
    });
  }
}

const REPLAYABLE = 'GPU inputs, an out, no masks, positionIds or weights';
// scaledDotProductAttention()'s engines are released when idle (api/attention_engines.js): a
// replay is no call to them, so one could be gone by the next token.
const ENGINE_CALL = 'a scaledDotProductAttention() or selfAttention() call (make it each token)';

// Why a forward() plan could not be replayed (its buffers and shapes must stay those of the
// recording), or null.
function replayRefusal(plan) {
  if (![plan.query, plan.key, plan.value].every((d) => d === null || isDeviceData(d))) return 'a host input (its values were copied at the call)';
  if (!plan.deviceOut) return 'no out (its result would be a new buffer each time, which the calls after it do not read)';
  if (plan.keyPaddingMask.data || plan.attnMask.data) return 'a mask (its shape follows the keys)';
  if (plan.positionIds) return 'positionIds';
  if (plan.needWeights) return 'needWeights';
  if (plan.cache?.rows) return 'rows';
  return null;
}

const recorded = (what) => new OptionError(`batch: ${what} after the step's first submit(); a GpuStep holds one step (replay() it), `
  + 'a GpuBatch takes other calls', { argument: 'batch', expected: 'a GpuBatch, or a GpuStep still recording', actual: 'a submitted GpuStep' });
