// The attention cases the kernel variants' tests share (node_variants, node_half_precision):
// [title, head widths, gpuMatchesWasm() arguments], shapes that reach a flash kernel's edges:
// several key tiles, causal across query tiles, masks and rows with every key masked, head widths
// not multiples of 16, wide heads, the score options, NaN and Inf where no row may look.
import { boolMask } from './node_setup.mjs';

export const attentionCases = [
  ['L 70, S 100 (several key tiles), batch 2, weights', { dk: 16, dv: 16 },
    { create: { embedDim: 32, numHeads: 2 }, B: 2, L: 70, S: 100, options: { needWeights: true } }],
  ['causal self-attention L 130 (three query tiles), per-head weights', { dk: 8, dv: 8 },
    { create: { embedDim: 16, numHeads: 2 }, B: 1, L: 130, self: true, options: { isCausal: true, needWeights: true, averageAttnWeights: false } }],
  ['key padding + attn mask, fully masked rows, causal with L > S', { dk: 8, dv: 8 }, maskedCase({ embedDim: 24, numHeads: 3 }, 40, 21)],
  ['d_k 12, d_v 40 (head widths not multiples of 16), grouped-query heads', { dk: 12, dv: 40 },
    { create: { embedDim: 48, numHeads: 4, numKvHeads: 2, vdim: 48, valueHeadDim: 40 }, B: 1, L: 37, S: 50 }],
  ['wide heads d_k 128, d_v 160, causal', { dk: 128, dv: 160 },
    { create: { embedDim: 256, numHeads: 2, vdim: 256, valueHeadDim: 160 }, B: 1, L: 66, S: 40, options: { isCausal: true } }],
  ['wide heads d_k 128: masks, fully masked rows, weights', { dk: 128, dv: 128 }, maskedCase({ embedDim: 256, numHeads: 2 }, 40, 21)],
  // Issue 20: the score options in every variant's score path (attention_common's maskedScore).
  ['softcap 0.8 after scale 2.5, masks after it, q/k/v-only biases, GQA', { dk: 8, dv: 8 },
    maskedCase({ embedDim: 32, numHeads: 4, numKvHeads: 2, bias: { q: true, k: true, v: true }, scale: 2.5, softcap: 0.8 }, 70, 37)],
  ['masked means absent: NaN and Inf at keys no row may see (causal future, key padding, −∞ float mask), weights', { dk: 8, dv: 8 },
    maskedNonFiniteCase({ embedDim: 16, numHeads: 2 }, 10, 40)],
];

// Cross-attention, causal with L < S, where NaN and Inf key and value rows sit only at keys that
// every row has masked: key 20 (after every row's diagonal), key 6 (key padding), key 3 (−∞ in a
// float attention mask). Every row stays finite and equals WASM's, weights included.
function maskedNonFiniteCase(create, L, S) {
  const am = new Float32Array(L * S);
  for (let i = 0; i < L; i++) am[i * S + 3] = -Infinity;
  const kpm = new Uint8Array(S);
  kpm[6] = 1;
  return {
    create, B: 1, L, S, nonFiniteKeys: [[3, NaN], [6, Infinity], [20, NaN]],
    options: { keyPaddingMask: { data: kpm, shape: [1, S] }, attnMask: { data: am, shape: [L, S] }, isCausal: true, needWeights: true },
  };
}

// Key padding and a boolean attention mask with row 5 fully masked, causal, weights.
function maskedCase(create, L, S) {
  const am = boolMask(L * S, 3);
  for (let j = 0; j < S; j++) am[5 * S + j] = 1;
  return {
    create, B: 2, L, S,
    options: { keyPaddingMask: { data: boolMask(2 * S, 4, 1), shape: [2, S] }, attnMask: { data: am, shape: [L, S] }, isCausal: true, needWeights: true },
  };
}
