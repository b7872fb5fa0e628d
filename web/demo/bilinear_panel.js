// The low-rank panel (#bilinear-panel): each head's scores are x W_i yᵀ with W_i of rank ≤ d_k. It
// checks mha.headBilinearForm(i) against singular values and weights recomputed in JS.
import { MultiHeadAttention } from './loaded_package.js';
import { $, clearPanel, refillHeadSelect, redrawOnChange } from './page.js';
import { SEED, prng, gaussianTensor, makeStateDict } from './seeded_data.js';
import { singularValues, bilinearWeights } from './bilinear_math.js';
import { signedColor } from './colors.js';
import { heatmap, signedColorbar } from './heatmap.js';
import { MUTED, chartAxes, log10 } from './chart.js';

// ---------------------------------------------------------------- docs/attention-math/heads.md §5

const BIL = { embedDim: 16, kdim: 24, vdim: 20, numHeads: 4, L: 8, S: 12 };
const RANK_TOL = 1e-4;  // numerical rank in JS: σ_k > RANK_TOL · σ_1
let bilState = null;    // { E, kdim, dk, L, S, heads: [{ form, sigma, jsRank, js, diff }], weights, scale }

const BIL_IDS = ['bil-config', 'bil-shape', 'bil-rank', 'bil-js-rank', 'bil-sigma-pair', 'bil-params', 'bil-row', 'bil-diff'];

/** §5 on a small seeded cross-attention module without biases. Sets data-bilinear-max-diff (max
 *  |JS − module| over every head and weight), data-bilinear-ranks (library, per head),
 *  data-bilinear-js-ranks (σ count in JS), data-bilinear-sigma-diff (max |σ_library − σ_JS| / σ_1
 *  over every head), data-bilinear-head-dim, data-bilinear-params ("factored/full"). */
export async function runBilinear() {
  const rand = prng(SEED + 5);
  const { L, S, ...options } = BIL;
  const mha = await MultiHeadAttention.create({ ...options, bias: false });
  try {
    mha.loadStateDict(makeStateDict(mha.stateDictShapes, rand));
    const { embedDim: E, kdim, vdim, numHeads: h, headDim: dk } = mha.config;
    const x = gaussianTensor([1, L, E], rand);
    const y = gaussianTensor([1, S, kdim], rand);
    const v = gaussianTensor([1, S, vdim], rand);
    const { attnWeights } = await mha.forward(x, y, v, { needWeights: true, averageAttnWeights: false });
    const heads = [];
    let scale = 0;
    for (let i = 0; i < h; i++) {
      const form = mha.headBilinearForm(i);
      const [rows, cols] = form.matrix.shape;
      if (rows !== E || cols !== kdim) throw new Error(`headBilinearForm(${i}): shape [${form.matrix.shape}], expected [${E}, ${kdim}]`);
      const sigma = singularValues(form.matrix.data, E, kdim);
      const js = bilinearWeights(x.data, form.matrix.data, y.data, L, S, E, kdim, 1 / Math.sqrt(dk));
      let diff = 0;
      for (let k = 0; k < L * S; k++) diff = Math.max(diff, Math.abs(js[k] - attnWeights.data[i * L * S + k]));
      if (!Number.isFinite(diff)) throw new Error(`head ${i}: non-finite weights`);
      for (const w of form.matrix.data) scale = Math.max(scale, Math.abs(w));
      // The library's singular values (Eigen, from the factors) beside this JS SVD of W_i.
      const sigmaDiff = Math.max(...Array.from(sigma, (s, k) => Math.abs((form.singularValues[k] ?? 0) - s))) / sigma[0];
      heads.push({ form, sigma, sigmaDiff, jsRank: sigma.filter((s) => s > RANK_TOL * sigma[0]).length, js, diff });
    }
    bilState = { E, kdim, dk, L, S, heads, weights: attnWeights.data, scale };
    const maxDiff = Math.max(...heads.map((hd) => hd.diff));
    $('bil-config').textContent = `E=${E}, kdim=${kdim}, vdim=${vdim}, h=${h}, d_k=${dk}, bias: false; L=${L}, S=${S}`;
    $('bil-lo').textContent = (-scale).toFixed(2);
    $('bil-hi').textContent = `+${scale.toFixed(2)}`;
    refillHeadSelect($('bil-head'), h);
    drawBilinearHead();
    Object.assign(document.body.dataset, {
      bilinearMaxDiff: String(maxDiff),
      bilinearRanks: heads.map((hd) => hd.form.rank).join(','),
      bilinearJsRanks: heads.map((hd) => hd.jsRank).join(','),
      bilinearSigmaDiff: String(Math.max(...heads.map((hd) => hd.sigmaDiff))),
      bilinearHeadDim: String(dk),
      bilinearParams: `${heads[0].form.factoredParameters}/${heads[0].form.fullParameters}`,
    });
    return maxDiff;
  } finally {
    mha.dispose();
  }
}

function drawBilinearHead() {
  if (!bilState) return;
  const { E, kdim, dk, L, S, heads, weights, scale } = bilState;
  const i = Number($('bil-head').value) || 0;
  const { form, sigma, sigmaDiff, jsRank, js, diff } = heads[i];
  heatmap($('heat-bil'), form.matrix.data, E, kdim, { colorOf: signedColor(scale) });
  heatmap($('heat-bil-js'), js, L, S);
  heatmap($('heat-bil-mha'), weights, L, S, { offset: i * L * S });
  $('bil-shape').textContent = `[${form.matrix.shape.join(', ')}]`;
  $('bil-rank').textContent = `${form.rank}   (min(E, kdim) = ${Math.min(E, kdim)}, d_k = ${dk})`;
  $('bil-js-rank').textContent = `${jsRank}   (σ_${dk} = ${sigma[dk - 1].toExponential(2)}, σ_${dk + 1} = ${(sigma[dk] ?? 0).toExponential(2)})`;
  const first = (xs) => Array.from(xs).slice(0, 3).map((s) => s.toFixed(4)).join(' ');
  $('bil-sigma-pair').textContent = `${first(form.singularValues)} … | ${first(sigma)} …  (max |Δ|/σ₁ ${sigmaDiff.toExponential(1)})`;
  $('bil-params').textContent = `factored (E+kdim)·d_k = ${form.factoredParameters}  vs  full E·kdim = ${form.fullParameters}`;
  const row = (xs) => Array.from(xs).slice(0, 5).map((w) => w.toFixed(4)).join(' ');
  $('bil-row').textContent = `JS     ${row(js)}\nmodule ${row(weights.subarray(i * L * S, i * L * S + S))}`;
  const all = Math.max(...heads.map((hd) => hd.diff));
  $('bil-diff').textContent = `${diff.toExponential(2)} (this head, ${L}×${S} weights) · ${all.toExponential(2)} (all ${heads.length} heads)`;
  drawSigma($('bil-sigma'), sigma, dk);
}

function drawSigma(canvas, sigma, dk) {
  const n = sigma.length;
  const { ctx, box, X, Y } = chartAxes(canvas, {
    x0: 0, x1: n, y0: -10, y1: 0, yTicks: [0, -5, -10],
    xTicks: [[0.5, '1'], [dk - 0.5, String(dk)], [n - 0.5, String(n)]],
  });
  sigma.forEach((s, k) => {
    const y = Y(log10(s / sigma[0]));
    ctx.fillStyle = k < dk ? '#3451b2' : '#aab2c0';
    ctx.fillRect(X(k) + 1, y, X(k + 1) - X(k) - 2, box.bottom - y);
  });
  ctx.setLineDash([4, 3]);
  ctx.strokeStyle = '#ff3b6b';
  ctx.beginPath();
  ctx.moveTo(X(dk), box.top);
  ctx.lineTo(X(dk), box.bottom);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = '#ff3b6b';
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  ctx.fillText(`d_k = ${dk}`, X(dk) + 4, box.top + 2);
  ctx.fillStyle = MUTED;
  ctx.fillText('σ_k / σ_1', X(n) - 52, box.top + 2);
}

/** Blanks the panel after a failed run; the head <select> has nothing left to redraw. */
export function clearBilinearPanel() {
  clearPanel(['heat-bil', 'heat-bil-js', 'heat-bil-mha', 'bil-sigma'], BIL_IDS,
    ['bilinearMaxDiff', 'bilinearRanks', 'bilinearJsRanks', 'bilinearSigmaDiff', 'bilinearHeadDim', 'bilinearParams']);
  bilState = null;
}

export function initBilinearControls() {
  redrawOnChange('bil-head', drawBilinearHead);
  signedColorbar($('bil-colorbar'));
}
