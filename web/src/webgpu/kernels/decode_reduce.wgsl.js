// WGSL kernel: second half of the decode path: combines the per-chunk partials of
// decode_partial into each query row's output, and writes the row's (m, l) to `stats` as the
// flash kernel does (so the attention_weights kernel works unchanged after either path).
//
// Why a separate dispatch: the chunks of a row are computed by different workgroups, which
// cannot synchronise with each other inside one dispatch (and atomics on floats do not exist in
// WGSL). One workgroup per (batch, head, row): every invocation reads the few (m_c, l_c) pairs
// (S / 256 of them) and forms m = max m_c and l = Σ l_c·exp(m_c − m); then the invocations split
// the DV columns, acc[d] = Σ acc_c[d]·exp(m_c − m), out = acc / l. Chunks with l_c = 0 (every
// key masked) are skipped; a row with l = 0 gets zeros, as in the flash kernel.
//
// It uses only the uniform block (no masks, no q/k/v). DV is compile-time: one pipeline per DV.
import { attentionParams } from './attention_common.wgsl.js';
import { rowTableWgsl } from './row_table.wgsl.js';
import { DECODE_CHUNK, DECODE_WORKGROUP } from './decode_partial.wgsl.js';

/**
 * WGSL of combineChunks(bh, i, t): query row i of (batch, head) bh from its chunks' partials
 * (`part`), each output value stored by `store(at, value)` (a WGSL statement of the index and the
 * f32 expression), by invocation t of WG; returns the row's (m, l). With the uniform block, DV,
 * CHUNK and WG (decode_reduce_nan.wgsl.js combines through it too).
 */
export const combineChunksWgsl = (store) => /* wgsl */ `
fn combineChunks(bh: u32, i: u32, t: u32) -> vec2f {
  let chunks = decodeChunks(CHUNK);
  let row = (bh * p.L + i) * chunks * (DV + 2u);
  var m = NEG;
  for (var c = 0u; c < chunks; c++) {
    let at = row + c * (DV + 2u);
    if (part[at + 1u] > 0.0) { m = max(m, part[at]); }
  }
  var l = 0.0;
  for (var c = 0u; c < chunks; c++) {
    let at = row + c * (DV + 2u);
    let lc = part[at + 1u];
    if (lc > 0.0) { l += lc * exp(part[at] - m); }
  }
  var inv = 0.0;
  if (l > 0.0) { inv = 1.0 / l; }
  let o = ((bh / p.H) * p.L + i) * p.oStride + (bh % p.H) * DV;
  for (var d = t; d < DV; d += WG) {
    var a = 0.0;
    for (var c = 0u; c < chunks; c++) {
      let at = row + c * (DV + 2u);
      if (part[at + 1u] > 0.0) { a += part[at + 2u + d] * exp(part[at] - m); }
    }
    ${store('o + d', 'a * inv')}
  }
  return vec2f(m, l);
}
`;

export function decodeReduceShader({ dv, chunk = DECODE_CHUNK }) {
  return /* wgsl */ `${attentionParams}
const DV = ${dv}u;
const CHUNK = ${chunk}u;
const WG = ${DECODE_WORKGROUP}u;

@group(0) @binding(1) var<storage, read> part: array<f32>;         // [B·H, L, chunks, DV + 2]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;    // heads, row (b, i) at (b·L + i)·oStride
@group(0) @binding(3) var<storage, read_write> stats: array<f32>;  // [B, H, L, 2]: (m, l)
${rowTableWgsl(4)}${combineChunksWgsl((at, value) => `out[${at}] = ${value};`)}
// Grid: (L, B·H, 1).
@compute @workgroup_size(${DECODE_WORKGROUP})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let ml = combineChunks(wg.y, wg.x, t);
  if (t == 0u) {
    let st = (wg.y * p.L + wg.x) * 2u;
    stats[st] = ml.x;
    stats[st + 1u] = ml.y;
  }
}
`;
}
