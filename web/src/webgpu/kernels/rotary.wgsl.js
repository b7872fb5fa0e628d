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

/** The uniforms a rotation reads (the append that rotates takes them too: append_prepare.wgsl.js). */
export const ROTATION_FIELDS = ['half', 'interleaved', 'batchRows', 'row0'];

/**
 * WGSL of one rotation, over a uniform block with ROTATION_FIELDS and a `table` binding: pairAt(j)
 * the offsets in a head of pair j, rotated(v, b, i, j) pair j of row (b, i) rotated by its angle.
 * One place for the rule, which the rotary kernel and the append that rotates both apply.
 */
export const ROTATION_WGSL = /* wgsl */ `
fn pairAt(j: u32) -> vec2u {
  if (p.interleaved != 0u) { return vec2u(2u * j, 2u * j + 1u); }
  return vec2u(j, j + p.half);
}
fn rotated(v: vec2f, b: u32, i: u32, j: u32) -> vec2f {
  let t = ((b * p.batchRows + p.row0 + i) * p.half + j) * 2u;
  let c = table[t];
  let s = table[t + 1u];
  return vec2f(v.x * c - v.y * s, v.y * c + v.x * s);
}
`;

export function rotaryShader() {
  return /* wgsl */ `
${paramsWgsl(ROTARY_PARAMS)}@group(0) @binding(1) var<storage, read> table: array<f32>;   // [positions, half, 2]: (cos, sin)
@group(0) @binding(2) var<storage, read_write> x: array<f32>;
${ROTATION_WGSL}
// Grid: (ceil(heads·half / 64), count, B).
@compute @workgroup_size(${ROTARY_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (gid.x >= p.heads * p.half) { return; }
  let h = gid.x / p.half;
  let j = gid.x % p.half;
  let i = gid.y;
  let at = p.off + (gid.z * p.count + i) * p.stride + h * p.headDim;
  let pair = pairAt(j);
  let r = rotated(vec2f(x[at + pair.x], x[at + pair.y]), gid.z, i, j);
  x[at + pair.x] = r.x;
  x[at + pair.y] = r.y;
}
`;
}
