// WGSL kernel: rotary position embedding (RoPE, docs/attention-math/decoding.md §8), applied in place to
// the projected queries or keys after their bias, before attention reads them.
//
// Why a table: the angle p·θ_j loses its precision in f32 at large positions (about 10⁻² radian
// at p = 10⁵), so the CPU forms cos and sin of every (position, pair) in float64 for the call
// (rotary_table.js) and uploads them as f32, as the WASM core does (cpp/src/rotary.cpp); the
// shader only applies the rotation. One invocation per (row, head, pair): the pairs of a head are
// (j, j + dim/2) half-split (GPT-NeoX, Llama) or (2j, 2j + 1) interleaved (GPT-J); features at
// and above dim are left alone. Everything is a uniform: one pipeline per device.

import { paramsWgsl } from '../kernel_params.js';

/** Invocations per workgroup, along the (head, pair) axis. */
export const ROTARY_WORKGROUP = 64;

/** The kernel's uniforms, in order (kernel_params.js makes the struct and the packing). */
export const ROTARY_PARAMS = [
  ['count', 'u32', 'rows per batch'],
  ['heads', 'u32', 'heads per row'],
  ['headDim', 'u32', 'DK: head h of row (b, i) starts at off + (b·count + i)·stride + h·headDim'],
  ['off', 'u32'],
  ['stride', 'u32'],
  ['half', 'u32', 'rotary.dim / 2 pairs per head'],
  ['interleaved', 'u32', '1: pairs (2j, 2j + 1); 0: (j, j + half)'],
  ['batchRows', 'u32', 'row (b, i) reads table row b·batchRows + row0 + i: 0 when every batch shares the positions, count with positionIds'],
  ['row0', 'u32', 'the table row of row 0 (batchRows 0): its position less the table\'s first (a GpuStep\'s table spans its replays\' positions)'],
];

export function rotaryShader() {
  return /* wgsl */ `
${paramsWgsl(ROTARY_PARAMS)}@group(0) @binding(1) var<storage, read> table: array<f32>;   // [positions, half, 2]: (cos, sin)
@group(0) @binding(2) var<storage, read_write> x: array<f32>;

// Grid: (ceil(heads·half / 64), count, B).
@compute @workgroup_size(${ROTARY_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (gid.x >= p.heads * p.half) { return; }
  let h = gid.x / p.half;
  let j = gid.x % p.half;
  let i = gid.y;
  let at = p.off + (gid.z * p.count + i) * p.stride + h * p.headDim;
  var first = j;
  var second = j + p.half;
  if (p.interleaved != 0u) {
    first = 2u * j;
    second = 2u * j + 1u;
  }
  let t = ((gid.z * p.batchRows + p.row0 + i) * p.half + j) * 2u;
  let c = table[t];
  let s = table[t + 1u];
  let a = x[at + first];
  let b = x[at + second];
  x[at + first] = a * c - b * s;
  x[at + second] = b * c + a * s;
}
`;
}
