// What holds a KvCache's work (dispatch/kv_cache.js) for a GpuBatch (gpu_batch.js): a batched
// call on the cache appends when it is recorded, but whether it ran is WebGPU's verdict on the
// batch's submit, later, which undoes the appends of a refused one. Work on the cache from outside
// that batch (a call of another batch or none, read(), reset(), truncate(), keep(), fork()'s
// copy, the storage's delete) therefore waits, at its turn, for that verdict, the batch submitted
// first where it was not: a call planned on appends then refused rejects instead of running on
// rows never written, and an undo never lands after work that followed it. The batch's own calls
// while it records go on: it submits or drops them together.
import { BATCH } from '../base/batch_protocol.js';

export class BatchHold {
  #held = null;  // { batch, ticket, verdict } of the last call recorded into a GpuBatch, until its verdict

  /** A call on the cache is recorded into `batch`, as its call `ticket` (GpuBatch.record()). */
  recorded(batch, ticket) {
    const held = this.#held;
    if (held?.batch === batch && held.verdict === null) held.ticket = ticket;  // the same recording: no new record
    else this.#held = { batch, ticket, verdict: null };
  }

  /**
   * `batch`'s calls on the cache were submitted, `outcome` settling once WebGPU accepted or
   * refused them; null: they were dropped, and undone (GpuBatch.submit(), discard()).
   */
  submitted(batch, outcome) {
    if (this.#held?.batch !== batch) return;
    if (outcome) this.#holdUntil(this.#held, outcome);
    else this.#held = null;
  }

  /** Whether work of `batch` (a call's; null: the rest) must wait for a verdict (verdictBefore()). */
  waits(batch = null) {
    const held = this.#held;
    return held !== null && (held.batch !== batch || held.verdict !== null);
  }

  /**
   * At a piece of work's turn, where it waits: a promise settling (never rejecting) once the
   * verdict is in, the batch submitted now where it was not; the work then looks again. Else null.
   */
  verdictBefore(batch = null) {
    if (!this.submitFor(batch)) return null;
    return this.#held.verdict.then(() => {}, () => {});
  }

  /**
   * Where work of `batch` waits: the batch submitted now if it was not (at the work's call, so
   * that it is submitted before, as the package's own work outside a batch submits it: WebGPU
   * reads the cache's storage at that submit). Returns whether the work waits.
   */
  submitFor(batch = null) {
    if (!this.waits(batch)) return false;
    const held = this.#held;
    if (!held.verdict) this.#holdUntil(held, held.batch[BATCH.whenSubmitted](held.ticket));
    return true;
  }

  // `held` waits for `verdict`, and is let go once it settles.
  #holdUntil(held, verdict) {
    const done = () => {
      if (this.#held === held) this.#held = null;
    };
    held.verdict = verdict;
    verdict.then(done, done);
  }
}
