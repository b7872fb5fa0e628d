// WGSL kernel: fused attention of every (batch, head), softmax(q kᵀ · scale + masks) v, without
// ever materialising a score matrix (flash attention with an online softmax).
//
// Why this shape: one workgroup takes BR = 64 consecutive query rows of one (batch, head); each
// invocation owns one query row, keeping the row (DK floats), its output accumulator (DV floats)
// and its running max m and sum l in registers. The keys are walked in tiles of BC rows: the
// workgroup copies K and V tiles into workgroup memory once (through kAt / vAt, widening a narrow
// cache's values as it loads them) (BC·(DK + DV) floats, sized to stay
// within 16 KiB), then all 64 rows read them from there, a broadcast read. Per tile each row
// computes its BC scores, and when the tile holds an allowed key rescales acc and l by
// exp(m − m_new) and adds exp(s − m_new)·v. With isCausal the key loop stops after the tile's
// last row (keys beyond it are masked for every row of the tile), which halves the work.
//
// Masking follows attention_common: a row with no allowed key keeps l = 0 and gets a zero
// output. The final m and l of every row go to `stats`, so that the attention_weights kernel can
// produce the exact probabilities exp(s − m) / l when weights are asked for.
//
// DK and DV (the head widths) and BC are compile-time constants, since they size private and
// workgroup arrays: one pipeline per (DK, DV), made once and cached.
import { attentionCommon, flashBindings } from './attention_common.wgsl.js';

/** Query rows per workgroup (one per invocation). */
export const FLASH_BR = 64;
/** Workgroup memory the K/V tiles may use, in floats (16 KiB). */
export const FLASH_TILE_FLOATS = 4096;

/** Key rows per tile for head widths dk, dv; 0 when a single key row does not fit. */
export function flashKeyTile(dk, dv) {
  return Math.min(64, Math.floor(FLASH_TILE_FLOATS / (dk + dv)));
}

export function flashAttentionShader({ dk, dv, kv = 'float32' }) {
  const bc = flashKeyTile(dk, dv);
  if (bc < 1) throw new Error(`flash attention: head widths ${dk} + ${dv} do not fit workgroup memory`);
  return /* wgsl */ `${attentionCommon}
const DK = ${dk}u;
const DV = ${dv}u;
const BR = ${FLASH_BR}u;
const BC = ${bc}u;

${flashBindings({ kv, dk, dv })}
var<workgroup> ks: array<f32, ${bc * dk}>;  // [BC][DK]
var<workgroup> vs: array<f32, ${bc * dv}>;  // [BC][DV]

@compute @workgroup_size(${FLASH_BR})
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) t: u32) {
  let b = wg.y / p.H;
  let h = wg.y % p.H;
  let g = kvHead(h);
  let i = wg.x * BR + t;
  let live = i < p.L;  // a row of this tile that exists

  var qr: array<f32, DK>;
  if (live) {
    let at = p.qOff + (b * p.L + i) * p.qStride + h * DK;
    for (var d = 0u; d < DK; d++) { qr[d] = q[at + d]; }
  }
  var acc: array<f32, DV>;
  var m = NEG;
  var l = 0.0;

  // Uniform across the workgroup (workgroup id, uniforms and the read-only row table only), as the barriers need.
  var keyEnd = p.S;
  if (p.causal != 0u) { keyEnd = min(p.S, wg.x * BR + BR + shiftOf(b)); }

  // A window's first key (uniform too): a windowed step visits O(W) keys, not the whole cache.
  for (var j0 = firstKey(b, wg.x * BR); j0 < keyEnd; j0 += BC) {
    let n = min(BC, keyEnd - j0);
    for (var e = t; e < n * DK; e += BR) { ks[e] = kAt(keyRow(b, j0 + e / DK), g, e % DK); }
    for (var e = t; e < n * DV; e += BR) { vs[e] = vAt(keyRow(b, j0 + e / DV), g, e % DV); }
    workgroupBarrier();

    if (live) {
      var s: array<f32, BC>;
      var tileMax = NEG;
      for (var c = 0u; c < n; c++) {
        var dot = 0.0;
        for (var d = 0u; d < DK; d++) { dot += qr[d] * ks[c * DK + d]; }
        s[c] = maskedScore(dot, b, h, i, j0 + c);
        tileMax = max(tileMax, s[c]);
      }
      if (tileMax > MASKED_AT) {
        let mNew = max(m, tileMax);
        let alpha = exp(m - mNew);  // 0 while m is still NEG
        l *= alpha;
        for (var d = 0u; d < DV; d++) { acc[d] *= alpha; }
        for (var c = 0u; c < n; c++) {
          if (s[c] > MASKED_AT) {
            let e = exp(s[c] - mNew);
            l += e;
            for (var d = 0u; d < DV; d++) { acc[d] += e * vs[c * DV + d]; }
          }
        }
        m = mNew;
      }
    }
    workgroupBarrier();
  }

  if (live) {
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    let at = (b * p.L + i) * p.oStride + h * DV;
    for (var d = 0u; d < DV; d++) { out[at + d] = acc[d] * inv; }
    let st = ((b * p.H + h) * p.L + i) * 2u;
    stats[st] = m;
    stats[st + 1u] = l;
  }
}
`;
}
