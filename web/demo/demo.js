// webattention demo: runs the package source directly (no bundler) and shows what it computes.
// When a run ends, <body> gets data-status="ok" | "error", data-row-sum-error (max |Σ_j w_ij − 1|
// over every weight matrix shown) and data-ms-first / data-ms-median, for tests to read.
// The package is imported dynamically so that a missing build (web/dist) shows as an error on the
// page instead of a silently dead module.
let MultiHeadAttention, selfAttention, ready, wasmMemoryInUse;

const SEED = 20240611;
const IN_PROJ_GAIN = 3;   // sharper heads than plain Xavier, so the heatmaps show structure
const INPUT_STD = 0.5;    // input ~ N(0, 0.5²)
const WARM_RUNS = 20;       // timing samples, unless they would take longer than:
const WARM_BUDGET_MS = 2000;
const MIN_SAMPLE_MS = 2;    // browsers round performance.now() to 0.1 ms: time batches of small calls
const LIMITS = { L: [1, 1024], E: [1, 1024], h: [1, 64] };

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------- deterministic data

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(rand) {
  let u = 0;
  while (u === 0) u = rand();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** Xavier-uniform matrices and small uniform biases for every entry the module expects. */
function makeStateDict(specs, rand) {
  const dict = {};
  for (const { name, shape } of specs) {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    if (shape.length === 1) {
      for (let i = 0; i < data.length; i++) data[i] = (rand() * 2 - 1) * 0.1;
    } else {
      const gain = name.startsWith('out_proj') ? 1 : IN_PROJ_GAIN;
      const bound = gain * Math.sqrt(6 / (shape[0] + shape[1]));
      for (let i = 0; i < data.length; i++) data[i] = (rand() * 2 - 1) * bound;
    }
    dict[name] = { data, shape };
  }
  return dict;
}

/** Copies x [L, C] with every row rescaled to norm r. */
function equalNorm(x, L, C, r) {
  const y = new Float32Array(x.length);
  for (let i = 0; i < L; i++) {
    let ss = 0;
    for (let j = 0; j < C; j++) ss += x[i * C + j] ** 2;
    const f = ss > 0 ? r / Math.sqrt(ss) : 0;
    for (let j = 0; j < C; j++) y[i * C + j] = x[i * C + j] * f;
  }
  return y;
}

// ---------------------------------------------------------------- statistics

/** max |Σ_j w_ij − 1| over all rows of a [..., L, S] weight tensor. */
function rowSumError(w, S) {
  let worst = 0;
  for (let r = 0; r < w.length / S; r++) {
    let s = 0;
    for (let j = 0; j < S; j++) s += w[r * S + j];
    worst = Math.max(worst, Math.abs(s - 1));
  }
  return worst;
}

/** For one [L, L] matrix at `offset`: argmax of each row, rows peaking on the diagonal, and
 *  pairs breaking §2's bound α_ij ≤ max(α_ii, α_jj). */
function diagonalStats(w, L, offset = 0) {
  const at = (i, j) => w[offset + i * L + j];
  const argmax = new Int32Array(L);
  let onDiagonal = 0;
  let violations = 0;
  for (let i = 0; i < L; i++) {
    for (let j = 1; j < L; j++) if (at(i, j) > at(i, argmax[i])) argmax[i] = j;
    if (at(i, argmax[i]) <= at(i, i)) onDiagonal++;  // ties count for the diagonal
    for (let j = 0; j < L; j++) {
      if (j !== i && at(i, j) > Math.max(at(i, i), at(j, j)) + 1e-6) violations++;
    }
  }
  return { argmax, onDiagonal, violations };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** Median time of one call: up to WARM_RUNS samples (fewer past WARM_BUDGET_MS, at least 3),
 *  each a batch of calls long enough for the coarse browser timer. */
async function timeWarm(call) {
  await call();  // one untimed warm-up call
  let batch = 1;
  let elapsed;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) await call();
    elapsed = performance.now() - t0;
    if (elapsed >= MIN_SAMPLE_MS || batch >= 4096) break;
    batch *= 2;
  }
  const times = batch === 1 ? [elapsed] : [];  // a slow call's calibration run is a sample too
  const start = performance.now();
  while (times.length < WARM_RUNS && (times.length < 3 || performance.now() - start < WARM_BUDGET_MS)) {
    const t0 = performance.now();
    for (let i = 0; i < batch; i++) await call();
    times.push((performance.now() - t0) / batch);
  }
  return { ms: median(times), samples: times.length, batch };
}

// ---------------------------------------------------------------- drawing

// Viridis, polynomial fit (Matt Zucker, CC0).
const VIRIDIS = [
  [0.2777273272234177, 0.005407344544966578, 0.3340998053353061],
  [0.1050930431085774, 1.404613529898575, 1.384590162594685],
  [-0.3308618287255563, 0.214847559468213, 0.09509516302823659],
  [-4.634230498983486, -5.799100973351585, -19.33244095627987],
  [6.228269936347081, 14.17993336680509, 56.69055260068105],
  [4.776384997670288, -13.74514537774601, -65.35303263337234],
  [-5.435455855934631, 4.645852612178535, 26.3124352495832],
];
function viridis(t) {
  t = Math.min(1, Math.max(0, t));
  return [0, 1, 2].map((c) => {
    let v = 0;
    for (let k = VIRIDIS.length - 1; k >= 0; k--) v = v * t + VIRIDIS[k][c];
    return Math.round(255 * Math.min(1, Math.max(0, v)));
  });
}
const LUT = Array.from({ length: 256 }, (_, i) => viridis(i / 255));
const color = (w) => LUT[Math.round(255 * Math.sqrt(Math.min(1, Math.max(0, w))))];

/** Sizes a canvas's backing store to its CSS size × devicePixelRatio; returns a 2-D context in
 *  CSS pixels. */
function context(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const { width, height } = canvas.getBoundingClientRect();
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, width, height };
}

/** Heatmap of the [rows, cols] matrix at `offset` (√ colour scale over [0, 1]); optional
 *  per-row argmax outlines. */
function heatmap(canvas, w, rows, cols, { offset = 0, argmax = null } = {}) {
  const img = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const [r, g, b] = color(w[offset + i]);
    img.data.set([r, g, b, 255], i * 4);
  }
  const cells = new OffscreenCanvas(cols, rows);
  cells.getContext('2d').putImageData(img, 0, 0);
  const { ctx, width, height } = context(canvas);
  ctx.imageSmoothingEnabled = false;
  ctx.clearRect(0, 0, width, height);
  ctx.drawImage(cells, 0, 0, width, height);
  const cw = width / cols;
  const ch = height / rows;
  if (argmax && cw >= 3 && ch >= 3) {
    ctx.strokeStyle = '#ff3b6b';
    ctx.lineWidth = Math.min(2, cw / 4);
    for (let i = 0; i < rows; i++) {
      const lw = ctx.lineWidth;
      ctx.strokeRect(argmax[i] * cw + lw / 2, i * ch + lw / 2, cw - lw, ch - lw);
    }
  }
}

function clearCanvas(canvas) {
  const { ctx, width, height } = context(canvas);
  ctx.clearRect(0, 0, width, height);
}

function colorbar(canvas) {
  const { ctx, width, height } = context(canvas);
  for (let x = 0; x < width; x++) {
    const [r, g, b] = color((x / (width - 1)) ** 2);  // linear in the √ scale
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(x, 0, 1, height);
  }
}

// ---------------------------------------------------------------- the runs

const fmtMs = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : ms < 10 ? `${ms.toFixed(2)} ms` : `${ms.toFixed(1)} ms`);
const fmtShape = (s) => `[${s.join(', ')}]`;
/** Four values a line, sign-aligned. */
const fmtValues = (xs) => Array.from(xs, (v, i) => (i && i % 4 === 0 ? '\n' : i ? '  ' : '')
  + (v >= 0 ? ' ' : '') + v.toFixed(4)).join('');

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

function setStatus(kind, text) {
  const el = $('status');
  el.textContent = text;
  el.className = `status ${kind}`;
}

let coreLoadMs = null;
let headState = null;  // { weights, L } of the last §2 run, for the head <select>

async function runMha({ L, E, h, causal }) {
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
    heatmap($('heat-mha'), attnWeights.data, L, L);

    const self = await runSelfVsHead(mha, x, L, E, h);
    return { first, warm: warm.ms, err: Math.max(err, self.err) };
  } finally {
    mha.dispose();
  }
}

/** attention-math §2: plain self-attention on equal-norm tokens next to one weighted head. */
async function runSelfVsHead(mha, x, L, E, h) {
  // Norm r puts the diagonal logits at r²/√E = 4: peaked, but not a pure identity.
  const r = 2 * Math.pow(E, 0.25);
  const xs = equalNorm(x, L, E, r);
  const plain = await selfAttention({ data: xs, shape: [L, E] }, { returnWeights: true });
  const t = { data: xs, shape: [1, L, E] };
  const heads = await mha.forward(t, t, t, { needWeights: true, averageAttnWeights: false });

  const s = diagonalStats(plain.attnWeights.data, L);
  heatmap($('heat-self'), plain.attnWeights.data, L, L, { argmax: s.argmax });
  showStats($('self-stats'), s, L);

  headState = { weights: heads.attnWeights.data, L };
  const select = $('head-select');
  const keep = Math.min(Number(select.value) || 0, h - 1);
  select.replaceChildren(...Array.from({ length: h }, (_, i) => new Option(String(i), String(i))));
  select.value = String(keep);
  drawHead();

  return {
    err: Math.max(rowSumError(plain.attnWeights.data, L), rowSumError(heads.attnWeights.data, L)),
  };
}

function drawHead() {
  if (!headState) return;
  const { weights, L } = headState;
  const head = Number($('head-select').value) || 0;
  const offset = head * L * L;
  const s = diagonalStats(weights, L, offset);
  heatmap($('heat-head'), weights, L, L, { offset, argmax: s.argmax });
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

async function loadPackage() {
  if (MultiHeadAttention) return;
  try {
    ({ MultiHeadAttention, selfAttention, ready, wasmMemoryInUse } = await import('../src/browser.js'));
  } catch (e) {
    throw new Error(`could not load the package (${e.message}); was it built? run: bash scripts/build.sh`);
  }
}

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
  try {
    await loadPackage();
    const params = readParams();
    const url = new URL(location.href);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, k === 'causal' ? Number(v) : v);
    history.replaceState(null, '', url);
    const { first, warm, err } = await runMha(params);
    $('heap').textContent = `${((await wasmMemoryInUse()) / 1024).toFixed(1)} KiB`;
    body.dataset.rowSumError = String(err);
    body.dataset.msFirst = first.toFixed(3);
    body.dataset.msMedian = warm.toFixed(3);
    setStatus('ok', 'ok');
    body.dataset.status = 'ok';
  } catch (e) {
    console.error(e);
    const name = e?.name ?? 'Error';
    setStatus('error', `${name}: ${e?.message ?? String(e)}`);
    body.dataset.error = `${name}: ${e?.message ?? String(e)}`;
    delete body.dataset.rowSumError;
    for (const id of ['heat-mha', 'heat-self', 'heat-head']) clearCanvas($(id));
    for (const id of ['config', 'heap', 'out-shape', 'w-shape', 'out-values', 't-first', 't-median', 'row-sum', 'self-stats', 'head-stats']) $(id).textContent = '–';
    headState = null;
    body.dataset.status = 'error';
  } finally {
    button.disabled = false;
  }
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
  $('head-select').addEventListener('change', () => {
    try {
      drawHead();
    } catch (e) {
      setStatus('error', `${e.name}: ${e.message}`);
    }
  });
  colorbar($('colorbar'));
  run();
}

try {
  init();
} catch (e) {
  document.body.dataset.status = 'error';
  setStatus('error', `${e.name}: ${e.message}`);
}
