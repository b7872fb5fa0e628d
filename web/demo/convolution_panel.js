// The convolution panel (#conv-panel): nine heads whose masks pick the offsets of a 3×3 window
// reproduce a direct convolution; the sharpness sweep shows the additive bias converging.
import { MultiHeadAttention } from './loaded_package.js';
import { $, fmtMs, clearPanel } from './page.js';
import { N, PIX, KERNELS, initialImage, convolutionMasks, biasMask, directConvolution, maxDiff, isInterior } from './convolution_math.js';
import { signedColor, logColor } from './colors.js';
import { heatmap, outlineCell } from './heatmap.js';
import { chartAxes, log10 } from './chart.js';

const SWEEP = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];
const BORDER_GREY = [205, 210, 218];
const CONV_IDS = ['conv-config', 'conv-taps', 'conv-bool-diff', 'conv-bias-diff', 'conv-ms', 'conv-explain'];

// What the controls change between runs; the panel reads it on every run.
export const conv = {
  image: null,
  probe: [7, 8],
  sweep: null,    // [[s, interior diff]] for the current image and kernel
  runs: 0,
};

/** The slider is log2 s. */
export const sharpness = () => 2 ** Number($('conv-sharpness').value);
export const fmtS = (s) => (s < 1 ? String(s) : s.toFixed(s % 1 ? 2 : 0));

/** §6: the 9-head construction of tests/js/math.test.js against a direct convolution. Sets
 *  data-conv-max-diff (boolean mask, every pixel), data-conv-bias-max-diff (bias at the slider's
 *  sharpness, interior pixels), data-conv-sharpness, data-conv-sweep (JSON [[s, diff]]),
 *  data-conv-input-sum (Σ of the input pixels) and data-conv-runs (completed runs).
 *  `sweep`: recompute the sharpness sweep too (the image or the kernel changed). */
export async function runConvolution({ sweep = true } = {}) {
  const t0 = performance.now();
  const { boolMask } = convolutionMasks();
  conv.image ??= initialImage();
  const [kernelLabel, taps] = KERNELS[$('conv-kernel').value] ?? KERNELS['sobel-x'];
  const mode = $('conv-mode').value;
  const s = sharpness();
  const mha = await MultiHeadAttention.create({ embedDim: 1, numHeads: 9, headDim: 1, valueHeadDim: 1, bias: false });
  try {
    loadConvolutionWeights(mha, taps);
    const img = { data: conv.image, shape: [1, PIX, 1] };
    const expected = directConvolution(conv.image, taps);
    const maskShape = [9, PIX, PIX];
    let forwards = 0;
    const forward = (attnMask, needWeights) => {
      forwards++;
      return mha.forward(img, img, img, { attnMask: { data: attnMask, shape: maskShape }, needWeights, averageAttnWeights: false });
    };

    const exact = await forward(boolMask, mode === 'bool');
    const boolDiff = maxDiff(exact.output.data, expected, false);
    const soft = await forward(biasMask(s), mode === 'bias');
    const biasDiff = maxDiff(soft.output.data, expected, true);
    if (!Number.isFinite(boolDiff) || !Number.isFinite(biasDiff)) throw new Error('convolution: non-finite output');
    if (sweep || !conv.sweep) {
      conv.sweep = [];
      for (const sw of SWEEP) {
        const { output } = sw === s ? soft : await forward(biasMask(sw), false);
        conv.sweep.push([sw, maxDiff(output.data, expected, true)]);
      }
    }

    showConvolution({ mha, mode, shown: mode === 'bool' ? exact : soft, expected, maskShape, kernelLabel, taps, s, boolDiff, biasDiff });
    $('conv-ms').textContent = `${fmtMs(performance.now() - t0)} (${forwards} forwards of L = ${PIX})`;
    Object.assign(document.body.dataset, {
      convMaxDiff: String(boolDiff),
      convBiasMaxDiff: String(biasDiff),
      convSharpness: String(s),
      convSweep: JSON.stringify(conv.sweep),
      convInputSum: String(conv.image.reduce((a, b) => a + b, 0)),
      convRuns: String(++conv.runs),
    });
    return { boolDiff, biasDiff };
  } finally {
    mha.dispose();
  }
}

// Zero W_Q and W_K (scores = mask only), identity W_V per head, W_O = the taps.
function loadConvolutionWeights(mha, taps) {
  const fill = { q_proj_weight: () => 0, k_proj_weight: () => 0, v_proj_weight: () => 1, 'out_proj.weight': (i) => taps[i] };
  mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => {
    if (!fill[name] || shape.reduce((a, b) => a * b, 1) !== 9) throw new Error(`unexpected state-dict entry ${name} [${shape}]`);
    return [name, { data: Float32Array.from({ length: 9 }, (_, i) => fill[name](i)), shape }];
  })));
}

// The panel's maps and labels for one run: `shown` is the result of the chosen mode.
function showConvolution({ mha, mode, shown, expected, maskShape, kernelLabel, taps, s, boolDiff, biasDiff }) {
  const { numHeads, headDim, valueHeadDim } = mha.config;
  const range = Math.max(1e-6, ...Array.from(expected, Math.abs));
  heatmap($('conv-input'), conv.image, N, N, { colorOf: signedColor(1) });
  outlineCell($('conv-input'), N, N, ...conv.probe, '#1d2433');
  heatmap($('conv-direct'), expected, N, N, { colorOf: signedColor(range) });
  heatmap($('conv-mha'), shown.output.data, N, N, { colorOf: signedColor(range) });
  // The bias version's claim is the interior (a bias cannot express zero padding): its border
  // is drawn grey, so that the map shows what the max |diff| beside it measures.
  const outside = (i) => mode === 'bias' && !isInterior(i);
  const diff = shown.output.data.map((v, i) => (outside(i) ? NaN : Math.abs(v - expected[i])));
  heatmap($('conv-diff'), diff, N, N, { colorOf: (v) => (Number.isNaN(v) ? BORDER_GREY : logColor(v)) });
  $('conv-diff-scope').textContent = mode === 'bias' ? '; grey: the border, outside the bias claim' : '';
  // Σ over the heads of the probe pixel's weight rows: one-hot on its 3×3 window when sharp.
  const p = conv.probe[0] * N + conv.probe[1];
  const probe = new Float32Array(PIX);
  for (let k = 0; k < numHeads; k++) {
    const row = shown.attnWeights.data.subarray((k * PIX + p) * PIX, (k * PIX + p + 1) * PIX);
    for (let q = 0; q < PIX; q++) probe[q] += row[q];
  }
  heatmap($('conv-probe'), probe, N, N);
  outlineCell($('conv-probe'), N, N, ...conv.probe);

  $('conv-input-size').textContent = `${N}×${N}`;
  $('conv-mode-label').textContent = mode === 'bool' ? 'boolean mask' : `bias s = ${fmtS(s)}`;
  $('conv-probe-at').textContent = `(${conv.probe[0]}, ${conv.probe[1]})`;
  $('conv-config').textContent = `embedDim=1, h=${numHeads}, d_k=${headDim}, d_v=${valueHeadDim}, bias: false; `
    + `L=S=${PIX} pixels, attnMask [${maskShape.join(', ')}]`;
  const t = (i) => (taps[i] >= 0 ? ' ' : '') + (Number.isInteger(taps[i]) ? String(taps[i]) : taps[i].toFixed(3));
  $('conv-taps').textContent = `${kernelLabel}\n${[0, 3, 6].map((r) => [r, r + 1, r + 2].map(t).map((x) => x.padStart(6)).join(' ')).join('\n')}`;
  $('conv-bool-diff').textContent = `${boolDiff.toExponential(2)} (all ${PIX} pixels, zero padding)`;
  $('conv-bias-diff').textContent = `${biasDiff.toExponential(2)} (s = ${fmtS(s)}, interior ${N - 2}×${N - 2}; on the border the bias falls back to the nearest pixel inside)`;
  $('conv-lo').textContent = (-range).toFixed(2);
  $('conv-hi').textContent = `+${range.toFixed(2)}`;
  $('conv-s').textContent = fmtS(s);
  drawSweep($('conv-sweep'), conv.sweep, [s, biasDiff], boolDiff);
  $('conv-explain').textContent = explanation(mode, s, biasDiff, boolDiff);
}

// Below this max |diff| the bias version counts as the convolution (float32 rounding of the
// outputs, about 1e-7 here; the page test holds the sharpest sweep point to 1e-5 as well).
const EXACT = 1e-5;

/** What the current setting shows, in words: the panel opens where the claim holds (s = 64) and
 *  says what moving the slider does. */
function explanation(mode, s, biasDiff, boolDiff) {
  if (mode === 'bool') {
    return `Boolean mask: each head allows exactly one key, pixel p + Δk, so the output is the convolution `
      + `(max |diff| ${boolDiff.toExponential(1)} over all pixels, zero padding included). The sharpness slider only applies to the bias version.`;
  }
  const exactFrom = conv.sweep.find(([, d]) => d < EXACT)?.[0];
  const from = exactFrom === undefined ? '' : ` (from s ≈ ${fmtS(exactFrom)} on, in the chart)`;
  if (biasDiff < EXACT) {
    return `s = ${fmtS(s)}: every head's softmax is one-hot to float precision, so the bias version is the convolution `
      + `on the interior (max |diff| ${biasDiff.toExponential(1)}, a dark difference map)${from}. `
      + 'Slide s left to watch the softmax spread over neighbouring pixels and the output blur. '
      + 'On the border (grey) a bias cannot give zero padding; the boolean mask is exact there too.';
  }
  return `s = ${fmtS(s)}: the bias is too soft, so each head's softmax still spreads over neighbouring pixels and the `
    + `output is a blurred convolution (max |diff| ${biasDiff.toPrecision(2)}: the bright difference map). `
    + `It becomes exact as s grows${from}: slide right.`;
}

function drawSweep(canvas, sweep, [s, d], boolDiff) {
  const { ctx, box, X, Y } = chartAxes(canvas, {
    x0: -2.2, x1: 6.2, y0: -8, y1: 1, yTicks: [0, -2, -4, -6, -8],
    xTicks: [[-2, '¼'], [0, '1'], [2, '4'], [4, '16'], [6, '64']], xLabel: 'sharpness s (log scale)',
  });
  ctx.setLineDash([4, 3]);
  ctx.strokeStyle = '#1a7f37';
  ctx.beginPath();
  ctx.moveTo(box.left, Y(log10(boolDiff)));
  ctx.lineTo(box.right, Y(log10(boolDiff)));
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.strokeStyle = '#3451b2';
  ctx.fillStyle = '#3451b2';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  sweep.forEach(([sw, dw], i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, X(Math.log2(sw)), Y(log10(dw))));
  ctx.stroke();
  for (const [sw, dw] of sweep) {
    ctx.beginPath();
    ctx.arc(X(Math.log2(sw)), Y(log10(dw)), 2.5, 0, 2 * Math.PI);
    ctx.fill();
  }
  ctx.fillStyle = '#ff3b6b';
  ctx.beginPath();
  ctx.arc(X(Math.log2(s)), Y(log10(d)), 5, 0, 2 * Math.PI);
  ctx.fill();
  ctx.fillStyle = '#1a7f37';
  ctx.textAlign = 'right';
  ctx.textBaseline = 'bottom';
  ctx.fillText('boolean mask', box.right - 4, Y(log10(boolDiff)) - 2);
}

/** Blanks the panel after a failed run. */
export function clearConvolutionPanel() {
  clearPanel(['conv-input', 'conv-direct', 'conv-mha', 'conv-diff', 'conv-probe', 'conv-sweep'], CONV_IDS,
    ['convMaxDiff', 'convBiasMaxDiff', 'convSharpness', 'convSweep']);
}
