// WGSL kernel: appends a call's new key or value rows to a KV cache on the GPU, in place.
//
// Why a kernel and not copyBufferToBuffer: the new rows are columns of the projection's output
// (Q, K and V side by side when fused) and land in a ring (position p in slot p mod capacity), so
// one dispatch does the strided gather and the wrap; no buffer is created per step. The cache
// rows are [B, capacity, numKvHeads·d]: the layout the attention kernels read through keyRow().

import { paramsWgsl } from '../kernel_params.js';
import { rowTableWgsl } from './row_table.wgsl.js';

/** Invocations per workgroup, along a row's columns (words, for a narrow cache). */
export const APPEND_WORKGROUP = 64;

/**
 * The uniforms of both append kernels, this float32 one and a float16 / int8 cache's
 * (cache_narrow.wgsl.js), in order (kernel_params.js makes the struct and the packing).
 */
export const APPEND_PARAMS = [
  ['count', 'u32', 'new rows per batch (L)'],
  ['heads', 'u32', 'numKvHeads'],
  ['d', 'u32', 'values per head (headDim or valueHeadDim)'],
  ['srcOff', 'u32', 'new row (b, i) at src[srcOff + (b·count + i)·srcStride]'],
  ['srcStride', 'u32'],
  ['capacity', 'u32', 'cache rows per batch'],
  ['first', 'u32', 'position of new row 0 (the cache\'s length before the call)'],
  ['perRow', 'u32', '1: batch b goes to cache row rowTable[2b] from position rowTable[2b + 1] (rowTableWgsl())'],
];

export function cacheAppendShader() {
  return /* wgsl */ `
${paramsWgsl(APPEND_PARAMS)}@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> cache: array<f32>;
${rowTableWgsl(3, { shift: 'first', positions: false })}
// Grid: (ceil(heads·d / 64), count, B) (cacheAppendGrid(), cache_narrow.wgsl.js).
@compute @workgroup_size(${APPEND_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let width = p.heads * p.d;
  let c = gid.x;
  if (c >= width) { return; }
  let i = gid.y;
  let b = gid.z;
  let slot = (shiftOf(b) + i) % p.capacity;
  cache[(cacheRow(b) * p.capacity + slot) * width + c] = src[p.srcOff + (b * p.count + i) * p.srcStride + c];
}
`;
}
