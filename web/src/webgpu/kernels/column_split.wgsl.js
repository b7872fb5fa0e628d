// What the few-rows kernels share (linear_rows.wgsl.js, q8_split.wgsl.js: a decode step's
// projections): a workgroup of 256 invocations owns COLS columns and ROWS rows of Y, and the
// LANES invocations of a column split its reduction over K between them. Grid ⌈N / COLS⌉ ×
// ⌈M / ROWS⌉.

/** Columns and rows of Y per workgroup, and invocations per column (cols · lanes = 256). */
export const SPLIT_TILE = { cols: 8, rows: 4, lanes: 32 };

/** The dispatch grid of a problem { M, N }. */
export const splitGrid = ({ M, N }) => [Math.ceil(N / SPLIT_TILE.cols), Math.ceil(M / SPLIT_TILE.rows), 1];

/**
 * WGSL: the constants COLS, ROWS, LANES, a workgroup array `scratch` of f32 [COLS][ROWS][LANES]
 * (a column's per-lane values for each row), and main()'s head through its column c, its lane, Y's
 * column n and the first row m0 (the body and the closing brace are the kernel's). subgroups:
 * main() also takes the builtins sgLane (subgroup_invocation_id) and sgSize (subgroup_size).
 */
export function columnSplitHead(scratch, { subgroups = false } = {}) {
  const { cols, rows, lanes } = SPLIT_TILE;
  return /* wgsl */ `const COLS = ${cols}u;
const ROWS = ${rows}u;
const LANES = ${lanes}u;
var<workgroup> ${scratch}: array<f32, ${cols * rows * lanes}>;  // [COLS][ROWS][LANES]

@compute @workgroup_size(${cols * lanes})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lt: u32${subgroups
    ? ',\n        @builtin(subgroup_invocation_id) sgLane: u32, @builtin(subgroup_size) sgSize: u32' : ''}) {
  let c = lt / LANES;
  let lane = lt % LANES;
  let n = wg.x * COLS + c;
  let m0 = wg.y * ROWS;`;
}
