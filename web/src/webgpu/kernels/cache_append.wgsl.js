// WGSL kernel: appends a call's new key and value rows to a KV cache on the GPU, in place, and
// writes each new slot's flag of the NaN rule (nonfinite_rows.wgsl.js): one dispatch for what a
// step on a cache stores.
//
// Why a kernel and not copyBufferToBuffer: the new rows are columns of the projection's output
// (Q, K and V side by side when fused) and land in a ring (position p in slot p mod capacity), so
// one dispatch does the strided gather and the wrap; no buffer is created per step. The cache
// rows are [B, capacity, numKvHeads·d] in the cache's dtype (float32, or narrow: float16 rounded,
// int8 quantised: cache_narrow.wgsl.js): the layout the attention kernels read through keyRow().
//
// One workgroup per new row (and batch; its size: workgroup_size.js) stores its K and V rows and
// ORs together whether any stored value is an infinity or a NaN, which its first invocation
// writes as the slot's flag (a u32 after K's rows, gpu_kv_cache.js): the flag needs the whole
// row, so the row is one workgroup's. Values move as u32 bits, so a float32 cache keeps a NaN's
// bits as given.
import { paramsWgsl } from '../kernel_params.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { cacheHeadWords, quantiseMaxima, storeHelpersWgsl, storeRowWgsl } from './cache_narrow.wgsl.js';
import { rowWorkgroup } from './workgroup_size.js';
import { PREPARE_PARAMS, prepareBindingsWgsl, prepareRowWgsl, prepareSteps } from './append_prepare.wgsl.js';

/** The append kernel's uniforms, in order (kernel_params.js makes the struct and the packing). */
export const APPEND_PARAMS = [
  ['count', 'u32', 'new rows per batch (S)'],
  ['kOff', 'u32', 'new K row (b, i) at srcK[kOff + (b·count + i)·kStride]'],
  ['kStride', 'u32'],
  ['vOff', 'u32', 'new V row (b, i) at srcV[vOff + (b·count + i)·vStride]'],
  ['vStride', 'u32'],
  ['capacity', 'u32', 'cache rows per batch'],
  ['first', 'u32', 'position of new row 0 (the cache\'s length before the call)'],
  ['perRow', 'u32', '1: batch b goes to cache row rowTable[2b] from position rowTable[2b + 1] (rowTableWgsl())'],
  ['flagsOff', 'u32', 'the flag of cache slot r at cacheK[flagsOff + r]: 1 when its K or V row holds a non-finite value'],
];

/** The uniforms of an append that prepares its row (append_prepare.wgsl.js): the append's, then the steps'. */
export const PREPARED_APPEND_PARAMS = [...APPEND_PARAMS, ...PREPARE_PARAMS];

/** The kernel's grid: a workgroup per new row (`count` of them) and batch. */
export const cacheAppendGrid = ({ count, B }) => [count, B, 1];

/**
 * The append kernel of a cache of `dtype` ('float32' | 'float16' | 'int8') with `heads` K/V heads
 * of dk key and dv value values. Bindings: uniforms, srcK, srcV, cacheK (with the flags), cacheV,
 * the row table. With `prepare` ('norm', 'rope' or 'norm+rope', append_prepare.wgsl.js: a call
 * whose Q, K and V rows are one projection's) the workgroup first takes those steps over its
 * row's qHeads query and `heads` key heads in place, then stores the K they made: one dispatch
 * for all. Bindings then: uniforms (PREPARED_APPEND_PARAMS), src (the projection), cacheK,
 * cacheV, the row table, and the steps' (prepareBindingsWgsl()).
 */
export function cacheAppendShader({ dtype, dk, dv, heads, qHeads = 0, prepare = '' }) {
  const steps = prepareSteps(prepare);
  const [srcK, srcV] = steps.length ? ['src', 'src'] : ['srcK', 'srcV'];
  const K = { src: srcK, cache: 'cacheK', from: 'kFrom', to: 'kTo', D: 'DK', W: 'KW', top: 'topK' };
  const V = { src: srcV, cache: 'cacheV', from: 'vFrom', to: 'vTo', D: 'DV', W: 'VW', top: 'topV' };
  const int8 = dtype === 'int8';
  // Each invocation takes every WG-th value (word) of the K and V rows.
  const wg = rowWorkgroup(heads * Math.max(dk, dv));
  const sources = steps.length ? '@group(0) @binding(1) var<storage, read_write> src: array<u32>;\n' : `@group(0) @binding(1) var<storage, read> srcK: array<u32>;
@group(0) @binding(2) var<storage, read> srcV: array<u32>;
`;
  const [cacheK, cacheV, rows] = steps.length ? [2, 3, 4] : [3, 4, 5];
  return /* wgsl */ `${paramsWgsl(steps.length ? PREPARED_APPEND_PARAMS : APPEND_PARAMS)}
${sources}@group(0) @binding(${cacheK}) var<storage, read_write> cacheK: array<u32>;
@group(0) @binding(${cacheV}) var<storage, read_write> cacheV: array<u32>;
${rowTableWgsl(rows, { shift: 'first', positions: false })}${steps.length ? prepareBindingsWgsl(steps, rows + 1) + prepareRowWgsl(steps, qHeads) : ''}
const G = ${heads}u;
const DK = ${dk}u;
const DV = ${dv}u;
const KW = ${cacheHeadWords(dtype, dk)}u;  // cache words per head
const VW = ${cacheHeadWords(dtype, dv)}u;
const WG = ${wg}u;
fn nonFinite(bits: u32) -> bool { return (bits & 0x7f800000u) == 0x7f800000u; }
${storeHelpersWgsl(dtype)}
var<workgroup> found: atomic<u32>;
${int8 ? 'var<workgroup> topK: array<atomic<u32>, G>;\nvar<workgroup> topV: array<atomic<u32>, G>;\n' : ''}
// Grid: (count, B) (cacheAppendGrid()).
@compute @workgroup_size(${wg})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let i = wg.x;
  let b = wg.y;
  let row = cacheRow(b) * p.capacity + (shiftOf(b) + i) % p.capacity;
  let kFrom = p.kOff + (b * p.count + i) * p.kStride;
  let vFrom = p.vOff + (b * p.count + i) * p.vStride;
  let kTo = row * G * KW;
  let vTo = row * G * VW;
  // Zeroed by the kernel's own stores, not WGSL's zeroing (workgroup_zero.wgsl.js says why).
  if (t == 0u) { atomicStore(&found, 0u); }
  ${int8 ? 'for (var h = t; h < G; h += WG) { atomicStore(&topK[h], 0u); atomicStore(&topV[h], 0u); }' : ''}
  ${steps.length ? 'prepareRow(b, i, t);  // its writes visible to the stores below (its last barrier)' : ''}
  workgroupBarrier();
  ${int8 ? `${quantiseMaxima(K)}\n  ${quantiseMaxima(V)}\n  workgroupBarrier();` : ''}
  var bad = false;
  ${storeRowWgsl(dtype, K)}
  ${storeRowWgsl(dtype, V)}
  if (bad) { atomicOr(&found, 1u); }
  workgroupBarrier();
  if (t == 0u) { cacheK[p.flagsOff + row] = atomicLoad(&found); }
}
`;
}

