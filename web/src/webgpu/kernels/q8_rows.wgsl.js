// WGSL kernel: a projection's input rows quantised for activations 'int8' (docs/attention-math/storage.md
// §11, the WASM core's cpp/src/kernels/q8_rows.h): each row of X, per block of Q8_BLOCK values
// along it, by llama.cpp's quantize_row_q8_0 rule with d kept in f32:
//   d = max|x| / 127,   q = round(x / d) (halves away from zero), every q 0 where d is 0,
// and d NaN (every q 0) for a block holding a NaN or an infinity, so that the row's outputs are
// NaN as on WASM. The codes go out four per u32 word (the first in the lowest byte, as
// dot4I8Packed reads them), a row's blocks padded to whole blocks with zero codes (a short last
// block multiplies zeros there), and each block's d as an f32.
//
// One workgroup of Q8_BLOCK invocations per (block, row), one value each; the block's max is a
// reduction over the magnitudes' bits (a non-negative f32's bits order as its value, and every
// non-finite magnitude's bits lie at or above +Inf's, so the same max says whether the block is
// finite without trusting float comparisons with NaN, which WGSL lets a GPU assume away): a
// workgroup-memory tree (variant 'tree32', no subgroups needed) or, with `subgroups` (variant
// 'sg32'), subgroupMax in registers and one barrier (subgroup_reduce.wgsl.js). A max of integers
// is the same in any order, so both give the same codes and d, bit for bit. Grid: (blocks,
// min(M, 65535), ⌈M / 65535⌉).
//
// The divisions round as the core's do (q8_division.wgsl.js), so the codes and scales are the
// core's bit for bit.
import { Q8_BLOCK } from '../../storage/storage_types.js';
import { paramsWgsl } from '../kernel_params.js';
import { q8BlockWgsl } from './packed_values.wgsl.js';
import { q8DivisionWgsl } from './q8_division.wgsl.js';
import { ENABLE_SUBGROUPS, subgroupReductions } from './subgroup_reduce.wgsl.js';

/** The quantiser's uniforms: X [M, K] at x[xOff + m·xStride + k] (LINEAR_PARAMS' names and meanings). */
export const Q8_ROWS_PARAMS = [
  ['M', 'u32', 'rows'],
  ['K', 'u32', 'values per row'],
  ['xOff', 'u32', 'X[m, k] = x[xOff + m·xStride + k]'],
  ['xStride', 'u32'],
];

/** Rows per grid dimension (WebGPU's default maxComputeWorkgroupsPerDimension). */
export const Q8_ROWS_PER_DIM = 65535;

// The block's largest magnitude, as bits: `top`.
const blockMax = (subgroups) => (subgroups ? `  let sg = subgroupLayout(i);
  let top = blockMaxOf(bitcast<u32>(value) & 0x7fffffffu, sg);` : `  magnitudes[i] = bitcast<u32>(value) & 0x7fffffffu;
  workgroupBarrier();
  for (var half = Q8_BLOCK / 2u; half > 0u; half /= 2u) {
    if (i < half) { magnitudes[i] = max(magnitudes[i], magnitudes[i + half]); }
    workgroupBarrier();
  }
  let top = magnitudes[0];`);

/** subgroups: the block's max by subgroup operations (the device must have 'subgroups'). */
export function q8RowsShader({ subgroups = false } = {}) {
  return /* wgsl */ `${subgroups ? `${ENABLE_SUBGROUPS}\n` : ''}
${paramsWgsl(Q8_ROWS_PARAMS)}@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> codes: array<u32>;   // [M][⌈K/Q8_BLOCK⌉ · Q8_BLOCK / 4]
@group(0) @binding(3) var<storage, read_write> scales: array<u32>;  // [M][⌈K/Q8_BLOCK⌉]: d's bits
${q8BlockWgsl}
const INF_BITS = 0x7f800000u;
const NAN_BITS = 0x7fc00000u;  // written as bits: WGSL has no NaN constant
${subgroups ? subgroupReductions(Q8_BLOCK, { blockMaxOf: 'maxU32' }) : 'var<workgroup> magnitudes: array<u32, Q8_BLOCK>;'}
var<workgroup> q: array<i32, Q8_BLOCK>;

${q8DivisionWgsl}
@compute @workgroup_size(Q8_BLOCK)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(num_workgroups) groups: vec3u,
        @builtin(local_invocation_index) i: u32) {
  let row = wg.z * groups.y + wg.y;
  let blocks = (p.K + Q8_BLOCK - 1u) / Q8_BLOCK;
  let k = wg.x * Q8_BLOCK + i;
  let inside = row < p.M && k < p.K;
  var value = 0.0;
  if (inside) { value = x[p.xOff + row * p.xStride + k]; }
${blockMax(subgroups)}
  let finite = top < INF_BITS;
  let d = over127(bitcast<f32>(top));
  var q8 = 0;
  if (finite && d > 0.0) { q8 = quotientCode(value, d, true); }
  q[i] = q8;
  workgroupBarrier();
  if (row >= p.M) { return; }
  if (i < Q8_BLOCK / 4u) {
    let w = 4u * i;
    codes[(row * blocks + wg.x) * (Q8_BLOCK / 4u) + i] = (u32(q[w]) & 0xffu) | ((u32(q[w + 1u]) & 0xffu) << 8u)
      | ((u32(q[w + 2u]) & 0xffu) << 16u) | ((u32(q[w + 3u]) & 0xffu) << 24u);
  }
  if (i == 0u) { scales[row * blocks + wg.x] = select(NAN_BITS, bitcast<u32>(d), finite); }
}
`;
}
