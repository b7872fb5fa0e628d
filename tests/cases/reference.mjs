// The float64 reference of the kernel-level cases for the JS runners (C++ has its own,
// tests/cpp/kernel_reference.h): attention with grouped-query heads, the position rule (causal,
// query offset, window), the list's masks (their rule: README.md) and rotary embedding, written
// from the formulas (docs/attention-math.md §1, §7, §8), sharing no code with the package; each
// query row is the contract reference's attendRow().
import { attendRow, linear as contractLinear } from '../contract/reference.mjs';

/** A mask entry of kind 'bool' | 'additive' | 'additive-inf' (the additive value, -Infinity where
 * the boolean rule masks) from the boolean rule's answer and the additive value. */
const entry = (kind, masked, value) => {
  if (kind === 'bool') return Number(masked);
  return kind === 'additive-inf' && masked ? -Infinity : value;
};

/** The list's key-padding mask [batch, S], or null for 'none'. */
export function keyPaddingMask(kind, batch, S) {
  if (kind === 'none') return null;
  const data = kind === 'bool' ? new Uint8Array(batch * S) : new Float32Array(batch * S);
  for (let b = 0; b < batch; b++) {
    for (let j = 0; j < S; j++) data[b * S + j] = entry(kind, (j + b) % 4 === 3, ((3 * j + b) % 5 - 2) / 4);
  }
  return { data, shape: [batch, S] };
}

/** The list's attention mask [batch·heads, L, S], or null for 'none'. */
export function attnMask(kind, batch, heads, L, S, maskedRows = []) {
  if (kind === 'none') return null;
  const data = kind === 'bool' ? new Uint8Array(batch * heads * L * S) : new Float32Array(batch * heads * L * S);
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < L; i++) {
        for (let j = 0; j < S; j++) {
          const at = ((b * heads + h) * L + i) * S + j;
          data[at] = entry(kind, maskedRows.includes(i) || (i + 2 * j + b + h) % 5 === 0, ((3 * i + 5 * j + h) % 7 - 3) / 2);
        }
      }
    }
  }
  return { data, shape: [batch * heads, L, S] };
}

/** A mask entry applied to a score: -Infinity where a boolean one is set or an additive one is
 * -Infinity (whatever the score: masked means absent), else added. */
const applyMask = (mask, at, s) => {
  if (!mask) return s;
  if (mask.data instanceof Uint8Array) return mask.data[at] ? -Infinity : s;
  return mask.data[at] === -Infinity ? -Infinity : s + mask.data[at];
};

/**
 * Attention: q [B, L, H·dk], k [B, S, Hkv·dk], v [B, S, Hkv·dv] (Float32Array or Float64Array);
 * query i at position queryOffset + i, key j at j. Returns Float64Array [B, L, H·dv]; a row with
 * no allowed key is zero.
 */
export function attention({ batch, heads, kvHeads, L, S, dk, dv, causal, queryOffset = 0, window = 0 }, q, k, v, keyPadding, mask) {
  const group = heads / kvHeads;
  const scale = 1 / Math.sqrt(dk);
  const out = new Float64Array(batch * L * heads * dv);
  const scores = new Array(S);  // null: a masked key (attendRow())
  for (let b = 0; b < batch; b++) {
    for (let h = 0; h < heads; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < L; i++) {
        const position = queryOffset + i;
        const qi = ((b * L + i) * heads + h) * dk;
        for (let j = 0; j < S; j++) {
          const kj = ((b * S + j) * kvHeads + g) * dk;
          let dot = 0;
          for (let c = 0; c < dk; c++) dot += q[qi + c] * k[kj + c];
          const allowed = (!causal || j <= position) && (window <= 0 || j > position - window);
          // The masks alone decide what is masked: a -Infinity dot is a key present with weight 0.
          let s = allowed ? dot * scale : -Infinity, masks = allowed ? 0 : -Infinity;
          const at = ((b * heads + h) * L + i) * S + j;
          [s, masks] = [s, masks].map((x) => applyMask(mask, at, applyMask(keyPadding, b * S + j, x)));
          scores[j] = masks === -Infinity ? null : s;
        }
        attendRow(scores, -Infinity, v, (j) => ((b * S + j) * kvHeads + g) * dv, dv, out, ((b * L + i) * heads + h) * dv);
      }
    }
  }
  return out;
}

/** Sets every K/V head's row of each key in `keys` to `value` (NaN, Infinity) in x [B, S, width]. */
export function poisonKeys(x, batch, S, width, keys, value) {
  for (let b = 0; b < batch; b++) for (const j of keys) x.fill(value, (b * S + j) * width, (b * S + j + 1) * width);
  return x;
}

/** y [rows, out] = x [rows, in] · Wᵀ (+ b), W [out, in]: Float64Array (the contract's reference). */
export const linear = (x, rows, inDim, w, outDim, bias = null) => contractLinear(x, rows, inDim, w, outDim, 0, bias);

/**
 * Rotary embedding of rows [B, T, heads·headDim], row t at position p = positions[t] (every
 * batch alike) or, without positions, first + t: pair j of each head ((j, j + dim/2), or
 * (2j, 2j + 1) interleaved) turned by p·base^(-2j/dim). Returns a Float64Array.
 */
export function rotary(x, batch, T, heads, headDim, { dim, interleaved, base }, first = 0, positions = null) {
  const y = Float64Array.from(x);
  const half = dim / 2;
  for (let b = 0; b < batch; b++) {
    for (let t = 0; t < T; t++) {
      for (let h = 0; h < heads; h++) {
        const row = ((b * T + t) * heads + h) * headDim;
        for (let j = 0; j < half; j++) {
          const angle = (positions ? positions[t] : first + t) * base ** (-2 * j / dim);
          const i1 = row + (interleaved ? 2 * j : j), i2 = row + (interleaved ? 2 * j + 1 : j + half);
          const x1 = y[i1], x2 = y[i2];
          y[i1] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
          y[i2] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
        }
      }
    }
  }
  return y;
}
