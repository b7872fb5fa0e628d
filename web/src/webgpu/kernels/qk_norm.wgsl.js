// WGSL kernel: the qk-norm (Qwen3, Gemma 3; docs/attention-math/scores.md §10), an RMSNorm of every
// query or key head applied in place to the projected rows after their bias and before RoPE:
// x ← x / sqrt(mean(x²) + eps) · w, w [headDim]. One invocation per (row, head); sizes, offsets
// and eps are uniforms: one pipeline per device.
import { paramsWgsl } from '../kernel_params.js';
import { ROTARY_PARAMS } from './rotary.wgsl.js';

export const QK_NORM_WORKGROUP = 64;

// The rows are addressed as the rotary kernel addresses them (count, heads, headDim, off, stride).
const ROWS = ['count', 'heads', 'headDim', 'off', 'stride'];
export const QK_NORM_PARAMS = [...ROTARY_PARAMS.filter(([name]) => ROWS.includes(name)), ['eps', 'f32']];

export function qkNormShader() {
  return /* wgsl */ `
${paramsWgsl(QK_NORM_PARAMS)}@group(0) @binding(1) var<storage, read> w: array<f32>;  // [headDim]
@group(0) @binding(2) var<storage, read_write> x: array<f32>;

// Grid: (ceil(heads / 64), count, B).
@compute @workgroup_size(${QK_NORM_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  if (gid.x >= p.heads) { return; }
  let at = p.off + (gid.z * p.count + gid.y) * p.stride + gid.x * p.headDim;
  var squares = 0.0;
  for (var c = 0u; c < p.headDim; c++) { squares += x[at + c] * x[at + c]; }
  let inv = inverseSqrt(squares / f32(p.headDim) + p.eps);
  for (var c = 0u; c < p.headDim; c++) { x[at + c] = x[at + c] * inv * w[c]; }
}
`;
}
