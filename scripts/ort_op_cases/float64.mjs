// A problem (problems.mjs) evaluated in float64 from the operators' definitions, sharing no code
// with the package: the truth that both onnxruntime's expected outputs and the package's are
// measured against (where onnxruntime's own rounding is the question). Each query row is the
// contract reference's attendRow(), the tests' one float64 attention rule.
import { attendRow } from '../../tests/contract/reference.mjs';

/** x [rows, inDim] · W [inDim, cols] + b, columns [from, from + n). */
function project(x, rows, inDim, W, cols, b, from, n) {
  const out = new Float64Array(rows * n);
  for (let r = 0; r < rows; r++) for (let o = 0; o < n; o++) {
    let s = b[from + o];
    for (let c = 0; c < inDim; c++) s += x[r * inDim + c] * W[c * cols + from + o];
    out[r * n + o] = s;
  }
  return out;
}

/** A copy of x with the bias added (rotate() works in place: the problem's own arrays stay as given). */
const plus = (x, bias, width) => x.map((value, i) => value + (bias ? bias[i % width] : 0));

/** q, k, v rows after the op's own projection or bias. */
export function projected(p) {
  if (p.projection) {
    const { weight, bias, inDim } = p.projection;
    const qh = p.hq * p.d, vh = p.hq * p.dv, cols = 2 * qh + vh, rows = p.B * p.S;
    return { q: project(p.q, rows, inDim, weight, cols, bias, 0, qh), k: project(p.q, rows, inDim, weight, cols, bias, qh, qh), v: project(p.q, rows, inDim, weight, cols, bias, 2 * qh, vh) };
  }
  return { q: plus(p.q, p.qkvBias?.q, p.hq * p.d), k: plus(p.k, p.qkvBias?.k, p.hkv * p.d), v: plus(p.v, p.qkvBias?.v, p.hkv * p.dv) };
}

/**
 * Rotates heads of width d in place, row r at position positionOf(r), by the table's angles:
 * sign 1 rotates, −1 undoes a rotation (the inverse of [c −s; s c], exact for any table).
 */
export function rotate(x, rows, heads, d, { cos, sin, half, interleaved }, positionOf, sign = 1) {
  for (let r = 0; r < rows; r++) {
    const pos = positionOf(r);
    for (let h = 0; h < heads; h++) {
      const base = (r * heads + h) * d;
      for (let j = 0; j < half; j++) {
        const [a, b] = interleaved ? [base + 2 * j, base + 2 * j + 1] : [base + j, base + j + half];
        const norm = sign > 0 ? 1 : cos[pos * half + j] ** 2 + sin[pos * half + j] ** 2;
        const c = cos[pos * half + j] / norm, s = (sign * sin[pos * half + j]) / norm;
        [x[a], x[b]] = [x[a] * c - x[b] * s, x[b] * c + x[a] * s];
      }
    }
  }
  return x;
}

/** [B, T, N·H] rows → [B, N, T, H], past rows ([B, N, P, H]) first. */
function present(past, rows, B, N, P, L, H) {
  const T = P + L;
  const out = new Float64Array(B * N * T * H);
  for (let b = 0; b < B; b++) for (let n = 0; n < N; n++) {
    if (P) out.set(past.subarray((b * N + n) * P * H, (b * N + n + 1) * P * H), (b * N + n) * T * H);
    for (let t = 0; t < L; t++) {
      out.set(rows.subarray(((b * L + t) * N + n) * H, ((b * L + t) * N + n + 1) * H), ((b * N + n) * T + P + t) * H);
    }
  }
  return out;
}

/** The position of new row i of batch b. */
export const positionOf = (p) => (b, i) => p.positionIds?.[b][i] ?? p.P + i;

/** { output [B, S, hq·dv], presentKey [B, hkv, P + L, d], presentValue }: float64. */
export function evaluate(p) {
  const { B, S, L, P, hq, hkv, d, dv } = p;
  const T = P + L;
  const { q, k, v } = projected(p);
  const at = positionOf(p);
  if (p.rotary) {
    rotate(q, B * S, hq, d, p.rotary, (r) => at(Math.floor(r / S), r % S));
    rotate(k, B * L, hkv, d, p.rotary, (r) => at(Math.floor(r / L), r % L));
  }
  const K = present(p.pastK, k, B, hkv, P, L, d);
  const V = present(p.pastV, v, B, hkv, P, L, dv);
  const output = new Float64Array(B * S * hq * dv);
  const cap = p.softcap ? (x) => p.softcap * Math.tanh(x / p.softcap) : (x) => x;
  for (let b = 0; b < B; b++) for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / (hq / hkv));
    for (let i = 0; i < S; i++) {
      const self = P + i;  // the query's own place in the sequence: the causal and window rules' reference
      const scores = new Array(T).fill(null);  // null: masked (attendRow())
      for (let j = 0; j < T; j++) {
        if ((p.causal && j > self) || (p.window && j <= self - p.window)) continue;
        let s = 0;
        for (let c = 0; c < d; c++) s += q[((b * S + i) * hq + h) * d + c] * K[((b * hkv + g) * T + j) * d + c];
        const m = p.mask ? p.mask[((b * hq + h) * S + i) * T + j] : 0;
        scores[j] = m === -Infinity ? null : cap(s * p.scale) + m;
      }
      attendRow(scores, p.sinks ? p.sinks[h] : -Infinity, V, (j) => ((b * hkv + g) * T + j) * dv, dv, output, ((b * S + i) * hq + h) * dv);
    }
  }
  return { output, presentKey: K, presentValue: V };
}
