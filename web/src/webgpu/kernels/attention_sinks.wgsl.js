// WGSL kernel: attention sinks (gpt-oss; docs/attention-math/scores.md §10), applied after the attention
// kernel of either path, so that no attention variant needs to know about them. Every path leaves
// each row's normalised output o = Σ_j e^(s_j − m) v_j / l and its stats (m, l); the sink's logit
// σ_h joins the denominator, with m' = max(m, σ_h) and l' = l·e^(m − m') + e^(σ_h − m'):
//   o ← o · l·e^(m − m') / l',   stats ← (m', l'),
// so the weights kernel, which computes exp(s − m) / l from the stats, needs no change either. A
// row with no allowed key (m = NEG, l = 0) gets o = 0 and l' = 1: zero output, zero weights. Every
// exp's argument is <= 0. A sink of -Inf (no sink) arrives as the masks' finite sentinel
// (weight_storage.js); where a sink below the sentinel (-3.4e38) meets a row with no allowed key,
// l' = 0 and the row stays as it was instead of 0 / 0. (+Inf is refused at loadStateDict(); a NaN
// sink sends a plain call to the CPU, and a cached call's rows to nonfinite_rows.wgsl.js.) One
// invocation per (batch, head, query row).
import { paramsWgsl } from '../kernel_params.js';

export const SINKS_WORKGROUP = 64;

export const SINKS_PARAMS = [
  ['rows', 'u32', 'B·H·L: stats row (b, h, i) at ((b·H + h)·L + i)·2'],
  ['L', 'u32'],
  ['H', 'u32'],
  ['DV', 'u32', 'output row (b, i), head h at (b·L + i)·H·DV + h·DV'],
];

export function attentionSinksShader() {
  return /* wgsl */ `
${paramsWgsl(SINKS_PARAMS)}@group(0) @binding(1) var<storage, read> sinks: array<f32>;       // [H]
@group(0) @binding(2) var<storage, read_write> stats: array<f32>;  // [B, H, L, 2]: (m, l)
@group(0) @binding(3) var<storage, read_write> heads: array<f32>;  // [B, L, H·DV]

@compute @workgroup_size(${SINKS_WORKGROUP})
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let row = gid.x;
  if (row >= p.rows) { return; }
  let i = row % p.L;
  let h = (row / p.L) % p.H;
  let b = row / (p.L * p.H);
  let m = stats[row * 2u];
  let l = stats[row * 2u + 1u];
  let sink = sinks[h];
  let m2 = max(m, sink);
  let kept = l * exp(m - m2);
  let l2 = kept + exp(sink - m2);
  if (l2 == 0.0) { return; }
  let factor = kept / l2;
  let at = (b * p.L + i) * p.H * p.DV + h * p.DV;
  for (var c = 0u; c < p.DV; c++) { heads[at + c] *= factor; }
  stats[row * 2u] = m2;
  stats[row * 2u + 1u] = l2;
}
`;
}
