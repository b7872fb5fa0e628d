// The keys and positions a GpuStep's cached call is encoded for (dispatch/gpu_step.js): what its
// tape (step_tape.js) holds to while its replays play it.
import { BATCH } from '../base/batch_protocol.js';

const cdiv = (a, b) => Math.ceil(a / b);

/** Keys a replay's bound covers: a multiple of this many (keysBound()). */
export const STEP_KEYS = 256;

/**
 * A GpuStep's cached call (dispatch/gpu_step.js, its batch `replayable`), or null: the keys its
 * attention kernels are told to bound the keys by, the call's T rounded up to a multiple of
 * STEP_KEYS, so that its grid and uniforms stay those of its replays for STEP_KEYS tokens but for
 * the words of its cache's length, which the replay writes (step_tape.js). The keys past a row's
 * own are causally masked (a cached call is causal: a key after i + shift never counts), so the
 * results are those over T bit for bit (a chunk's masked keys add exactly 0).
 */
export function keysBound(plan) {
  return plan.batch?.[BATCH.replayable] && plan.cache && plan.S > 0 ? cdiv(plan.T, STEP_KEYS) * STEP_KEYS : null;
}

/**
 * The positions a GpuStep's call's rotary table spans, { first, count }, or null for another call
 * (its table is its rows' own): every first position a replay of the same bound can have
 * (boundOf() of step_tape.js: its last key below the bound, and above the bound's STEP_KEYS
 * before it) and the call's rows after it, so that the table is formed and written when the call
 * is encoded, not at each replay, which only moves the kernels' `row0` to its first position.
 */
export function stepTableSpan(plan) {
  const bound = keysBound(plan);
  if (bound === null) return null;
  const rows = Math.max(plan.L, plan.S);
  const first = Math.max(0, bound - STEP_KEYS - rows);
  return { first, count: bound - first };
}
