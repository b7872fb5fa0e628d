// webattention demo: runs the package source directly (no bundler) and shows what it computes.
// When a run ends, <body> gets data-status="ok" | "error", data-row-sum-error (max |Σ_j w_ij − 1|
// over every weight matrix shown) and data-ms-first / data-ms-median, for tests to read; the
// attention-math panels add data-bilinear-* (§5) and data-conv-* (§6), described at runBilinear()
// and runConvolution().

import { MultiHeadAttention, selfAttention, ready, wasmMemoryInUse, loadPackage } from './loaded_package.js';
import { $, setStatus, fmtMs, clearPanel } from './page.js';
import { runMha, clearMhaPanel, initMhaControls } from './mha_panel.js';
import { runBilinear, clearBilinearPanel, initBilinearControls } from './bilinear_panel.js';
import { SEED, INPUT_STD, prng, gaussian, gaussianTensor, makeStateDict, equalNorm } from './seeded_data.js';
import { rowSumError, diagonalStats, timeWarm } from './stats.js';
import { diverging, signedColor, logColor } from './colors.js';
import { heatmap, outlineCell, signedColorbar } from './heatmap.js';
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
  signedColorbar($('conv-colorbar'));
}

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
      clearBilinearPanel();
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
  initBilinearControls();
  initConvolutionControls();
  run();
}

try {
  init();
} catch (e) {
  document.body.dataset.status = 'error';
  setStatus('error', `${e.name}: ${e.message}`);
}
