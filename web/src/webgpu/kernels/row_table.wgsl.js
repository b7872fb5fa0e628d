// WGSL of a cached call's row table (issue 38: a batched cache's rows at lengths of their own, and
// a window counted in positionIds): which cache row each batch of the call is and where its
// positions start, then the call's positionIds where they move a window, read by the attention
// kernels (attention_common.wgsl.js), the NaN rule's and the cache append kernels. Its own file (no
// imports) because the append kernels are imported by the attention kernels' K/V reads.

/**
 * A call's row table at `binding` and its readers: where the uniform `perRow` is 1 (a cached call
 * on some rows, or on rows of unequal lengths), batch b of the call is the cache's row
 * rowTable[2b], its query row 0 at position rowTable[2b + 1] (that row's length before the call),
 * so each batch reads its own ring and sees its own keys; else batch b is row b at p.shift
 * (`shift`: p.first in the append kernels). With `positions` (the attention kernels' uniforms,
 * which have B, L and windowIds): where windowIds is 1, row i of batch b is at positionId(b, i) =
 * rowTable[2B + b·L + i] for the window (docs/attention-math/decoding.md §9), the table's rows part then
 * written for every batch. A kernel whose entry point never reads them has the binding declared
 * and unused (the decode reduce kernel), which its pipeline's layout leaves out.
 */
export const rowTableWgsl = (binding, { shift = 'shift', positions = true } = {}) => /* wgsl */ `
@group(0) @binding(${binding}) var<storage, read> rowTable: array<u32>;
fn cacheRow(b: u32) -> u32 {
  if (p.perRow != 0u) { return rowTable[2u * b]; }
  return b;
}
fn shiftOf(b: u32) -> u32 {
  if (p.perRow != 0u) { return rowTable[2u * b + 1u]; }
  return p.${shift};
}
${positions ? 'fn positionId(b: u32, i: u32) -> u32 { return rowTable[2u * p.B + b * p.L + i]; }\n' : ''}`;
