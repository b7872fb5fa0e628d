// A cached call's rows on the GPU: where a call on some rows of a batched cache, or on rows of
// unequal lengths, or with positionIds that move a window, tells its kernels each batch row's
// cache row, first position and ids (the row table, kernels/row_table.wgsl.js), and what the
// executor checks of them (cache_checks.js).
import { Usage } from './device.js';

/**
 * A cached call's rows at lengths of their own (a call on some `rows`, or rows of unequal
 * lengths), or null when every row is at one length: { table: Uint32Array [B, 2] (batch b's cache
 * row and its length before the call: kernels/row_table.wgsl.js), least (the least of those
 * lengths, the decode grid's first window) }.
 */
export function callRows(plan) {
  const { rows, lengthsBefore } = plan.cache ?? {};
  if (!lengthsBefore || (!rows && lengthsBefore.every((n) => n === lengthsBefore[0]))) return null;
  if (!rowsOfPlan.has(plan)) rowsOfPlan.set(plan, { table: rowPairs(plan), least: Math.min(...firstPositions(plan)) });
  return rowsOfPlan.get(plan);
}
// plan → callRows(plan): one table per call. Only such calls are kept: a WeakMap entry per call
// of every decode step (a replay's plans are new at each token) cost a profile's twentieth.
const rowsOfPlan = new WeakMap();

/** Each batch row's cache row: the call's `rows`, else its own. */
const cacheRowOf = ({ cache: { rows } }, b) => (rows ? rows[b] : b);

/** Each batch row's first new position: its cache row's length before the call. */
export const firstPositions = (plan) =>
  Array.from({ length: plan.B }, (_, b) => plan.cache.lengthsBefore?.[cacheRowOf(plan, b)] ?? plan.cache.lengthBefore);

/** The row table's head, [B, 2]: each batch row's cache row and first position. */
const rowPairs = (plan) => Uint32Array.from(firstPositions(plan).flatMap((n, b) => [cacheRowOf(plan, b), n]));

/**
 * A cached call's positionIds where they move its cache's window (docs/attention-math/decoding.md §9), or
 * null: the cache has a window and some id is not its row's own position (its first new position
 * plus the row index), as the core's window_in_ids(). Otherwise the kernels' plain rule is the same
 * rule, and the call keeps the plain kernels' table, uniforms and pipelines.
 */
export function windowIds(plan) {
  const { positionIds: ids, L, cache } = plan;
  if (!ids || !cache?.storage?.window) return null;
  const firsts = firstPositions(plan);
  return ids.some((id, at) => id !== firsts[Math.floor(at / L)] + (at % L)) ? ids : null;
}

/**
 * The row table a cached call's kernels read (kernels/row_table.wgsl.js), or null when they read
 * none: callRows()'s, and with windowIds() every batch's row and first position followed by the
 * ids, [B, L] from word 2B on.
 */
export function callTable(plan) {
  const ids = windowIds(plan);
  const rows = callRows(plan);
  if (!ids && !rows) return null;
  if (!tableOfPlan.has(plan)) {
    let table = rows?.table ?? null;
    if (ids) {
      const head = table ?? rowPairs(plan);
      table = new Uint32Array(head.length + ids.length);
      table.set(head);
      table.set(ids, head.length);
    }
    tableOfPlan.set(plan, table);
  }
  return tableOfPlan.get(plan);
}
const tableOfPlan = new WeakMap();  // plan → callTable(plan): one upload per call

// The row table's binding (a placeholder word when the call's kernels read none).
export const rowTableOf = (ctx, table) => (table ? ctx.upload(table, 'row table') : ctx.buffer(1, Usage.STORAGE, 'no row table'));

