// webattention demo: runs the package source directly (no bundler) and shows what it computes.
// When a run ends, <body> gets data-status="ok" | "error", data-row-sum-error (max |Σ_j w_ij − 1|
// over every weight matrix shown) and data-ms-first / data-ms-median, for tests to read; the
// attention-math panels add data-bilinear-* (§5) and data-conv-* (§6), described at runBilinear()
// and runConvolution().

import { MultiHeadAttention, selfAttention, ready, wasmMemoryInUse, loadPackage } from './loaded_package.js';
import { $, setStatus, fmtMs, clearPanel } from './page.js';
import { runMha, clearMhaPanel, initMhaControls } from './mha_panel.js';
import { SEED, INPUT_STD, prng, gaussian, gaussianTensor, makeStateDict, equalNorm } from './seeded_data.js';
import { rowSumError, diagonalStats, timeWarm } from './stats.js';
import { diverging, signedColor, logColor } from './colors.js';
import { heatmap, outlineCell, colorbar } from './heatmap.js';
import { MUTED, chartAxes, log10 } from './chart.js';

const LIMITS = { L: [1, 1024], E: [1, 1024], h: [1, 64] };

// ---------------------------------------------------------------- the runs

function readParams() {
  const form = $('controls');
  const num = (name) => {
    const v = Number(form.elements[name].value);
    const [lo, hi] = LIMITS[name];
    if (!Number.isInteger(v) || v < lo || v > hi) {
      throw new RangeError(`${name}: expected an integer in ${lo}..${hi}, got '${form.elements[name].value}'`);
    }
    return v;
  };
  return { L: num('L'), E: num('E'), h: num('h'), causal: form.elements.causal.checked };
}

// ---------------------------------------------------------------- attention-math §5

const BIL = { embedDim: 16, kdim: 24, vdim: 20, numHeads: 4, L: 8, S: 12 };
const RANK_TOL = 1e-4;  // numerical rank in JS: σ_k > RANK_TOL · σ_1
let bilState = null;    // { E, kdim, dk, L, S, heads: [{ form, sigma, jsRank, js, diff }], weights, scale }

/** Singular values of the row-major m×n matrix a (one-sided Jacobi in double), largest first. */
function singularValues(a, m, n) {
  // Columns of a (or of aᵀ when n > m, so that there are min(m, n) of them).
  const [rows, cols, at] = n <= m ? [m, n, (r, c) => a[r * n + c]] : [n, m, (r, c) => a[c * n + r]];
  const col = Array.from({ length: cols }, (_, c) => Float64Array.from({ length: rows }, (_, r) => at(r, c)));
  for (let sweep = 0; sweep < 60; sweep++) {
    let rotated = false;
    for (let p = 0; p < cols - 1; p++) {
      for (let q = p + 1; q < cols; q++) {
        const cp = col[p];
        const cq = col[q];
        let alpha = 0;
        let beta = 0;
        let gamma = 0;
        for (let r = 0; r < rows; r++) {
          alpha += cp[r] * cp[r];
          beta += cq[r] * cq[r];
          gamma += cp[r] * cq[r];
        }
        if (Math.abs(gamma) <= 1e-15 * Math.sqrt(alpha * beta)) continue;
        rotated = true;
        const zeta = (beta - alpha) / (2 * gamma);
        const t = (zeta >= 0 ? 1 : -1) / (Math.abs(zeta) + Math.sqrt(1 + zeta * zeta));
        const c = 1 / Math.sqrt(1 + t * t);
        const s = c * t;
        for (let r = 0; r < rows; r++) {
          const u = cp[r];
          cp[r] = c * u - s * cq[r];
          cq[r] = s * u + c * cq[r];
        }
      }
    }
    if (!rotated) break;
  }
  return col.map((v) => Math.hypot(...v)).sort((x, y) => y - x);
}

/** softmax(x W yᵀ · scale) over the S keys, for each of the L query rows: [L, S] in double. */
function bilinearWeights(x, W, y, L, S, E, kdim, scale) {
  const out = new Float64Array(L * S);
  const u = new Float64Array(kdim);
  for (let i = 0; i < L; i++) {
    u.fill(0);  // u = x_i W
    for (let r = 0; r < E; r++) {
      const xr = x[i * E + r];
      for (let c = 0; c < kdim; c++) u[c] += xr * W[r * kdim + c];
    }
    let max = -Infinity;
    for (let j = 0; j < S; j++) {
      let dot = 0;
      for (let c = 0; c < kdim; c++) dot += u[c] * y[j * kdim + c];
      out[i * S + j] = dot * scale;
      max = Math.max(max, out[i * S + j]);
    }
    let sum = 0;
    for (let j = 0; j < S; j++) sum += (out[i * S + j] = Math.exp(out[i * S + j] - max));
    for (let j = 0; j < S; j++) out[i * S + j] /= sum;
  }
  return out;
}


/** §5 on a small seeded cross-attention module without biases. Sets data-bilinear-max-diff (max
 *  |JS − module| over every head and weight), data-bilinear-ranks (library, per head),
 *  data-bilinear-js-ranks (σ count in JS), data-bilinear-head-dim, data-bilinear-params
 *  ("factored/full"). */
async function runBilinear() {
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
      heads.push({ form, sigma, jsRank: sigma.filter((s) => s > RANK_TOL * sigma[0]).length, js, diff });
    }
    bilState = { E, kdim, dk, L, S, heads, weights: attnWeights.data, scale };
    const maxDiff = Math.max(...heads.map((hd) => hd.diff));
    $('bil-config').textContent = `E=${E}, kdim=${kdim}, vdim=${vdim}, h=${h}, d_k=${dk}, bias: false; L=${L}, S=${S}`;
    $('bil-lo').textContent = (-scale).toFixed(2);
    $('bil-hi').textContent = `+${scale.toFixed(2)}`;
    const select = $('bil-head');
    const keep = Math.min(Number(select.value) || 0, h - 1);
    select.replaceChildren(...Array.from({ length: h }, (_, i) => new Option(String(i), String(i))));
    select.value = String(keep);
    drawBilinearHead();
    Object.assign(document.body.dataset, {
      bilinearMaxDiff: String(maxDiff),
      bilinearRanks: heads.map((hd) => hd.form.rank).join(','),
      bilinearJsRanks: heads.map((hd) => hd.jsRank).join(','),
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
  const { form, sigma, jsRank, js, diff } = heads[i];
  heatmap($('heat-bil'), form.matrix.data, E, kdim, { colorOf: signedColor(scale) });
  heatmap($('heat-bil-js'), js, L, S);
  heatmap($('heat-bil-mha'), weights, L, S, { offset: i * L * S });
  $('bil-shape').textContent = `[${form.matrix.shape.join(', ')}]`;
  $('bil-rank').textContent = `${form.rank}   (min(E, kdim) = ${Math.min(E, kdim)}, d_k = ${dk})`;
  $('bil-js-rank').textContent = `${jsRank}   (σ_${dk} = ${sigma[dk - 1].toExponential(2)}, σ_${dk + 1} = ${(sigma[dk] ?? 0).toExponential(2)})`;
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

// ---------------------------------------------------------------- attention-math §6

const N = 16;           // image side; the tokens are its N² pixels
const PIX = N * N;
const OFFSETS = [];     // Δ_k = (dy, dx), k = 3·(dy+1) + (dx+1)
for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) OFFSETS.push([dy, dx]);
const SWEEP = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64];
const KERNELS = {
  'sobel-x': ['Sobel x (vertical edges)', [-1, 0, 1, -2, 0, 2, -1, 0, 1]],
  'sobel-y': ['Sobel y (horizontal edges)', [-1, -2, -1, 0, 0, 0, 1, 2, 1]],
  laplacian: ['Laplacian', [0, 1, 0, 1, -4, 1, 0, 1, 0]],
  sharpen: ['sharpen', [0, -1, 0, -1, 5, -1, 0, -1, 0]],
  box: ['box blur', Array(9).fill(1 / 9)],
  emboss: ['emboss', [-2, -1, 0, -1, 1, 1, 0, 1, 2]],
  random: ['random (seeded)', (() => { const r = prng(SEED + 6); return Array.from({ length: 9 }, () => r() * 2 - 1); })()],
};

/** A drawn shape: a filled rectangle, a disc and a diagonal stroke, values 0 / 1 (and ½). */
function initialImage() {
  const img = new Float32Array(PIX);
  for (let y = 0; y < N; y++) {
    for (let x = 0; x < N; x++) {
      let v = 0;
      if (y >= 2 && y <= 6 && x >= 2 && x <= 8) v = 1;
      if ((y - 10.5) ** 2 + (x - 10) ** 2 <= 3.3 ** 2) v = 1;
      if (x - y === 9 || x - y === 10) v = Math.max(v, 0.5);
      img[y * N + x] = v;
    }
  }
  return img;
}

const conv = {
  image: null,
  probe: [7, 8],
  dist2: null,    // [9, L, L]: |q − (p + Δ_k)|²
  boolMask: null, // [9, L, L]: 0 where q = p + Δ_k, else 1
  sweep: null,    // [[s, interior diff]] for the current image and kernel
  runs: 0,
};

function convMasks() {
  if (conv.dist2) return;
  conv.dist2 = new Float32Array(9 * PIX * PIX);
  conv.boolMask = new Uint8Array(9 * PIX * PIX).fill(1);
  OFFSETS.forEach(([dy, dx], k) => {
    for (let p = 0; p < PIX; p++) {
      const ty = Math.floor(p / N) + dy;
      const tx = (p % N) + dx;
      const row = (k * PIX + p) * PIX;
      for (let q = 0; q < PIX; q++) conv.dist2[row + q] = (Math.floor(q / N) - ty) ** 2 + ((q % N) - tx) ** 2;
      if (ty >= 0 && ty < N && tx >= 0 && tx < N) conv.boolMask[row + ty * N + tx] = 0;
    }
  });
}

function biasMask(s) {
  const bias = new Float32Array(conv.dist2.length);
  for (let i = 0; i < bias.length; i++) bias[i] = -s * conv.dist2[i];
  return bias;
}

/** y(p) = Σ_k w_k x(p + Δ_k), zero padding (cross-correlation, as torch conv2d). */
function directConvolution(image, taps) {
  const y = new Float64Array(PIX);
  for (let py = 0; py < N; py++) {
    for (let px = 0; px < N; px++) {
      OFFSETS.forEach(([dy, dx], k) => {
        const qy = py + dy;
        const qx = px + dx;
        if (qy >= 0 && qy < N && qx >= 0 && qx < N) y[py * N + px] += taps[k] * image[qy * N + qx];
      });
    }
  }
  return y;
}

/** max |a − b| over every pixel, or over the interior (pixels whose 3×3 window is inside). */
function maxDiff(a, b, interior) {
  let worst = 0;
  const lo = interior ? 1 : 0;
  for (let py = lo; py < N - lo; py++) {
    for (let px = lo; px < N - lo; px++) worst = Math.max(worst, Math.abs(a[py * N + px] - b[py * N + px]));
  }
  return worst;
}

const sharpness = () => 2 ** Number($('conv-sharpness').value);
const fmtS = (s) => (s < 1 ? String(s) : s.toFixed(s % 1 ? 2 : 0));

/** §6: the 9-head construction of tests/js/math.test.js against a direct convolution. Sets
 *  data-conv-max-diff (boolean mask, every pixel), data-conv-bias-max-diff (bias at the slider's
 *  sharpness, interior pixels), data-conv-sharpness, data-conv-sweep (JSON [[s, diff]]),
 *  data-conv-input-sum (Σ of the input pixels) and data-conv-runs (completed runs).
 *  `sweep`: recompute the sharpness sweep too (the image or the kernel changed). */
async function runConvolution({ sweep = true } = {}) {
  const t0 = performance.now();
  convMasks();
  conv.image ??= initialImage();
  const [kernelLabel, taps] = KERNELS[$('conv-kernel').value] ?? KERNELS['sobel-x'];
  const mode = $('conv-mode').value;
  const s = sharpness();
  const mha = await MultiHeadAttention.create({ embedDim: 1, numHeads: 9, headDim: 1, valueHeadDim: 1, bias: false });
  try {
    // Zero W_Q and W_K (scores = mask only), identity W_V per head, W_O = the taps.
    const fill = { q_proj_weight: () => 0, k_proj_weight: () => 0, v_proj_weight: () => 1, 'out_proj.weight': (i) => taps[i] };
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => {
      if (!fill[name] || shape.reduce((a, b) => a * b, 1) !== 9) throw new Error(`unexpected state-dict entry ${name} [${shape}]`);
      return [name, { data: Float32Array.from({ length: 9 }, (_, i) => fill[name](i)), shape }];
    })));
    const { numHeads, headDim, valueHeadDim } = mha.config;
    const img = { data: conv.image, shape: [1, PIX, 1] };
    const expected = directConvolution(conv.image, taps);
    const maskShape = [9, PIX, PIX];
    let forwards = 0;
    const forward = (attnMask, needWeights) => {
      forwards++;
      return mha.forward(img, img, img, { attnMask: { data: attnMask, shape: maskShape }, needWeights, averageAttnWeights: false });
    };

    const exact = await forward(conv.boolMask, mode === 'bool');
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

    const shown = mode === 'bool' ? exact : soft;
    const range = Math.max(1e-6, ...Array.from(expected, Math.abs));
    heatmap($('conv-input'), conv.image, N, N, { colorOf: signedColor(1) });
    outlineCell($('conv-input'), N, N, ...conv.probe, '#1d2433');
    heatmap($('conv-direct'), expected, N, N, { colorOf: signedColor(range) });
    heatmap($('conv-mha'), shown.output.data, N, N, { colorOf: signedColor(range) });
    const diff = shown.output.data.map((v, i) => Math.abs(v - expected[i]));
    heatmap($('conv-diff'), diff, N, N, { colorOf: logColor });
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

// Coalesces the §6 controls' events: one run at a time, the latest settings win.
let convChain = Promise.resolve();
let convPending = null;
function queueConvolution(sweep) {
  if (convPending) {
    convPending.sweep ||= sweep;
    return convPending.promise;
  }
  const job = { sweep };
  job.promise = convChain.then(() => {
    convPending = null;
    return runConvolution({ sweep: job.sweep });
  });
  convPending = job;
  convChain = job.promise.catch(() => {});
  return job.promise;
}

function onConvolutionControl(sweep) {
  if (!MultiHeadAttention) return;
  queueConvolution(sweep).catch((e) => {
    console.error(e);
    setStatus('error', `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`);
    document.body.dataset.status = 'error';
  });
}

/** Cell (row, col) of an N×N canvas under a click. */
function cellAt(canvas, event) {
  const { left, top, width, height } = canvas.getBoundingClientRect();
  const col = Math.floor(((event.clientX - left) / width) * N);
  const row = Math.floor(((event.clientY - top) / height) * N);
  return row >= 0 && row < N && col >= 0 && col < N ? [row, col] : null;
}

function initConvolutionControls() {
  $('conv-kernel').replaceChildren(...Object.entries(KERNELS).map(([key, [label]]) => new Option(label, key)));
  $('conv-kernel').addEventListener('change', () => onConvolutionControl(true));
  $('conv-mode').addEventListener('change', () => {
    $('conv-sharpness').disabled = $('conv-mode').value === 'bool';
    onConvolutionControl(false);
  });
  $('conv-sharpness').addEventListener('input', () => {
    $('conv-s').textContent = fmtS(sharpness());
    onConvolutionControl(false);
  });
  $('conv-controls').addEventListener('submit', (e) => e.preventDefault());
  $('conv-input').addEventListener('click', (e) => {
    const cell = cellAt($('conv-input'), e);
    if (!cell || !conv.image) return;
    const i = cell[0] * N + cell[1];
    conv.image[i] = conv.image[i] > 0 ? 0 : 1;
    onConvolutionControl(true);
  });
  $('conv-probe').addEventListener('click', (e) => {
    const cell = cellAt($('conv-probe'), e);
    if (!cell) return;
    conv.probe = cell;
    onConvolutionControl(false);
  });
  colorbar($('bil-colorbar'), (t) => diverging(2 * t - 1));
  colorbar($('conv-colorbar'), (t) => diverging(2 * t - 1));
}

const BIL_IDS = ['bil-config', 'bil-shape', 'bil-rank', 'bil-js-rank', 'bil-params', 'bil-row', 'bil-diff'];
const CONV_IDS = ['conv-config', 'conv-taps', 'conv-bool-diff', 'conv-bias-diff', 'conv-ms'];

async function run() {
  const body = document.body;
  body.dataset.status = 'running';
  setStatus('running', 'running…');
  const button = $('controls').querySelector('button');
  button.disabled = true;
  // Let "running…" paint before the (synchronous) WASM work; the timeout covers hidden tabs.
  await new Promise((resolve) => {
    requestAnimationFrame(() => setTimeout(resolve, 0));
    setTimeout(resolve, 100);
  });
  const errors = [];
  try {
    await loadPackage();
    const params = readParams();
    const url = new URL(location.href);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, k === 'causal' ? Number(v) : v);
    history.replaceState(null, '', url);
    const { first, warm, err } = await runMha(params);
    body.dataset.rowSumError = String(err);
    body.dataset.msFirst = first.toFixed(3);
    body.dataset.msMedian = warm.toFixed(3);
  } catch (e) {
    errors.push(e);
    clearMhaPanel();
  }
  // The §5 and §6 panels do not depend on the form: they run (and fail) on their own.
  if (MultiHeadAttention) {
    try {
      await runBilinear();
    } catch (e) {
      errors.push(e);
      clearPanel(['heat-bil', 'heat-bil-js', 'heat-bil-mha', 'bil-sigma'], BIL_IDS,
        ['bilinearMaxDiff', 'bilinearRanks', 'bilinearJsRanks', 'bilinearHeadDim', 'bilinearParams']);
      bilState = null;
    }
    try {
      await queueConvolution(true);
    } catch (e) {
      errors.push(e);
      clearPanel(['conv-input', 'conv-direct', 'conv-mha', 'conv-diff', 'conv-probe', 'conv-sweep'], CONV_IDS,
        ['convMaxDiff', 'convBiasMaxDiff', 'convSharpness', 'convSweep']);
    }
    try {
      $('heap').textContent = `${((await wasmMemoryInUse()) / 1024).toFixed(1)} KiB`;
    } catch (e) {
      errors.push(e);
    }
  }
  if (errors.length === 0) {
    delete body.dataset.error;
    setStatus('ok', 'ok');
    body.dataset.status = 'ok';
  } else {
    for (const e of errors) console.error(e);
    const e = errors[0];
    const text = `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`;
    setStatus('error', text);
    body.dataset.error = text;
    body.dataset.status = 'error';
  }
  button.disabled = false;
}

function init() {
  // ?L=&E=&h=&causal= preset the form, so any configuration can be linked to.
  const form = $('controls');
  const params = new URLSearchParams(location.search);
  for (const name of ['L', 'E', 'h']) if (params.has(name)) form.elements[name].value = params.get(name);
  if (params.has('causal')) form.elements.causal.checked = !['0', 'false', 'off'].includes(params.get('causal'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    run();
  });
  initMhaControls();
  $('bil-head').addEventListener('change', () => {
    try {
      drawBilinearHead();
    } catch (e) {
      setStatus('error', `${e.name}: ${e.message}`);
    }
  });
  initConvolutionControls();
  run();
}

try {
  init();
} catch (e) {
  document.body.dataset.status = 'error';
  setStatus('error', `${e.name}: ${e.message}`);
}
