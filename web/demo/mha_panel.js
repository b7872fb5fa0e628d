// The first two panels: MultiHeadAttention.forward on the form's configuration (output, timings,
// averaged weights, #mha-panel) and, from the same module, input and mask (causal or none),
// plain self-attention on equal-norm tokens next to one weighted head (#self-panel). The three
// weight maps share one colour scale (heat_scale.js), redrawn when its <select> changes.
import { MultiHeadAttention, scaledDotProductAttention, ready } from './loaded_package.js';
import { $, fmtMs, clearPanel, refillHeadSelect, redrawOnChange } from './page.js';
import { SEED, INPUT_STD, prng, gaussian, makeStateDict, equalNorm } from './seeded_data.js';
import { rowSumError, diagonalStats, timeWarm } from './stats.js';
import { heatmap, colorbar } from './heatmap.js';
import { heatScale } from './heat_scale.js';

const MAIN_IDS = ['config', 'heap', 'out-shape', 'w-shape', 'out-values', 't-first', 't-median', 'row-sum', 'self-stats', 'head-stats', 'self-mask', 'head-mask'];

const fmtShape = (s) => `[${s.join(', ')}]`;
/** Four values a line, sign-aligned. */
const fmtValues = (xs) => Array.from(xs, (v, i) => (i && i % 4 === 0 ? '\n' : i ? '  ' : '')
  + (v >= 0 ? ' ' : '') + v.toFixed(4)).join('');

let coreLoadMs = null;
// The weights of the last run, redrawn when the head or the colour scale changes:
// { L, averaged, plain, plainArgmax, heads }.
let shown = null;

/** Runs the module of the form's configuration; returns the first-call and warm times and the
 *  worst row-sum error over every weight matrix shown. */
export async function runMha({ L, E, h, causal }) {
  if (coreLoadMs === null) {
    const t0 = performance.now();
    await ready();
    coreLoadMs = performance.now() - t0;
  }
  $('t-load').textContent = fmtMs(coreLoadMs);

  const rand = prng(SEED);
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h });
  try {
    mha.loadStateDict(makeStateDict(mha.stateDictShapes, rand));
    const x = new Float32Array(L * E);
    for (let i = 0; i < x.length; i++) x[i] = INPUT_STD * gaussian(rand);
    const t = { data: x, shape: [1, L, E] };
    const options = { isCausal: causal, needWeights: true };
    $('config').textContent = `E=${E}, h=${h}, d_k=${E / h}, B=1, L=S=${L}, causal=${causal}`;

    const t0 = performance.now();
    const { output, attnWeights } = await mha.forward(t, t, t, options);
    const first = performance.now() - t0;
    const warm = await timeWarm(() => mha.forward(t, t, t, options));

    const values = output.data.subarray(0, Math.min(8, output.data.length));
    if (!output.data.every(Number.isFinite)) throw new Error('forward: the output has non-finite values');
    const err = rowSumError(attnWeights.data, L);
    if (!Number.isFinite(err)) throw new Error('forward: the attention weights have non-finite values');
    $('out-shape').textContent = fmtShape(output.shape);
    $('w-shape').textContent = fmtShape(attnWeights.shape);
    $('out-values').textContent = fmtValues(values);
    $('out-values').dataset.values = JSON.stringify(Array.from(values));
    $('t-first').textContent = fmtMs(first);
    $('t-median').textContent = `${fmtMs(warm.ms)}  (median of ${warm.samples}${warm.batch > 1 ? ` × ${warm.batch} calls` : ''})`;
    $('row-sum').textContent = err.toExponential(2);
    shown = { L, averaged: attnWeights.data };

    const self = await runSelfVsHead(mha, x, L, E, h, causal);
    drawMaps();
    return { first, warm: warm.ms, err: Math.max(err, self.err) };
  } finally {
    mha.dispose();
  }
}

/** docs/attention-math/basics.md §2: plain self-attention on equal-norm tokens next to one weighted head
 *  of the module above, both under its mask: a causal mask only removes keys j > i, so the
 *  diagonal argument (α_ij ≤ α_ii within a row) still holds. */
async function runSelfVsHead(mha, x, L, E, h, causal) {
  // Norm r puts the diagonal logits at r²/√E = 4: peaked, but not a pure identity.
  const r = 2 * Math.pow(E, 0.25);
  const xs = equalNorm(x, L, E, r);
  const t = { data: xs, shape: [1, L, E] };
  // softmax(X Xᵀ/√E) X, i.e. selfAttention(), with the module's mask.
  const plain = await scaledDotProductAttention(t, t, t, { isCausal: causal, needWeights: true });
  const heads = await mha.forward(t, t, t, { isCausal: causal, needWeights: true, averageAttnWeights: false });

  const s = diagonalStats(plain.attnWeights.data, L);
  showStats($('self-stats'), s, L);
  const mask = causal ? 'causal (key j ≤ query i)' : 'none';
  $('self-mask').textContent = mask;
  $('head-mask').textContent = mask;
  Object.assign(shown, { plain: plain.attnWeights.data, plainArgmax: s.argmax, heads: heads.attnWeights.data });
  refillHeadSelect($('head-select'), h);

  return {
    err: Math.max(rowSumError(plain.attnWeights.data, L), rowSumError(heads.attnWeights.data, L)),
  };
}

/** The three weight maps and the legend, on the scale the <select> picks for this L. */
function drawMaps() {
  if (!shown) return;
  const { L } = shown;
  const scale = heatScale($('heat-scale').value, L);
  const colorOf = scale.colorOf;
  heatmap($('heat-mha'), shown.averaged, L, L, { colorOf, maxPool: true });
  heatmap($('heat-self'), shown.plain, L, L, { colorOf, maxPool: true, argmax: shown.plainArgmax });
  colorbar($('colorbar'), scale.colorAt);
  $('scale-lo').textContent = scale.lo;
  $('scale-hi').textContent = scale.hi;
  $('scale-note').textContent = scale.note;
  document.body.dataset.heatScale = scale.kind;
  drawHead(colorOf);
}

function drawHead(colorOf = heatScale($('heat-scale').value, shown?.L ?? 1).colorOf) {
  if (!shown?.heads) return;
  const { heads, L } = shown;
  const head = Number($('head-select').value) || 0;
  const offset = head * L * L;
  const s = diagonalStats(heads, L, offset);
  heatmap($('heat-head'), heads, L, L, { offset, argmax: s.argmax, colorOf, maxPool: true });
  showStats($('head-stats'), s, L);
}

/** "row max on the diagonal: 32/32 rows" and the count of pairs breaking α_ij ≤ max(α_ii, α_jj). */
function showStats(el, { onDiagonal, violations }, L) {
  const sub = (base, index) => {
    const span = document.createElement('span');
    const s = document.createElement('sub');
    s.textContent = index;
    span.append(base, s);
    return span;
  };
  el.replaceChildren(
    `row max on the diagonal: ${onDiagonal}/${L} rows`, document.createElement('br'),
    'pairs with ', sub('α', 'ij'), ' > max(', sub('α', 'ii'), ', ', sub('α', 'jj'), `): ${violations}`);
}

/** Blanks both panels after a failed run; the head <select> has nothing left to redraw. */
export function clearMhaPanel() {
  clearPanel(['heat-mha', 'heat-self', 'heat-head'], MAIN_IDS, ['rowSumError']);
  shown = null;
}

export function initMhaControls() {
  redrawOnChange('head-select', () => drawHead());
  redrawOnChange('heat-scale', drawMaps);
  colorbar($('colorbar'));
}
