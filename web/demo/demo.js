// webattention demo: runs the package source directly (no bundler) and shows what it computes.
// When a run ends, <body> gets data-status="ok" | "error", data-row-sum-error (max |Σ_j w_ij − 1|
// over every weight matrix shown) and data-ms-first / data-ms-median, for tests to read; the
// maths panels (docs/attention-math.md) add data-bilinear-* (§5) and data-conv-* (§6), described at runBilinear()
// (bilinear_panel.js) and runConvolution() (convolution_panel.js). The text-generation panel
// (generation_panel.js) runs only from its own Generate button and reports in data-gen-*; the
// machine panel (machine_panel.js) fills data-machine-* once the core is loaded, and its Compare
// button (compare_backends.js, imported on the click) data-compare-*.
// This file only wires the page: the form, the order of the panels' runs and the status line.
import { MultiHeadAttention, wasmMemoryInUse, loadPackage } from './loaded_package.js';
import { $, setStatus, errorText } from './page.js';
import { runMha, clearMhaPanel, initMhaControls } from './mha_panel.js';
import { runBilinear, clearBilinearPanel, initBilinearControls } from './bilinear_panel.js';
import { clearConvolutionPanel } from './convolution_panel.js';
import { queueConvolution, initConvolutionControls } from './convolution_controls.js';
import { initGenerationControls } from './generation_panel.js';
import { showMachine, initMachineControls } from './machine_panel.js';

const LIMITS = { L: [1, 1024], E: [1, 1024], h: [1, 64] };

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
      clearConvolutionPanel();
    }
    try {
      $('heap').textContent = `${((await wasmMemoryInUse()) / 1024).toFixed(1)} KiB`;
    } catch (e) {
      errors.push(e);
    }
  }
  // The machine facts need the loaded core; their adapter probe is not part of the page's verdict.
  if (MultiHeadAttention) showMachine().catch((e) => console.error(e));
  if (errors.length === 0) {
    delete body.dataset.error;
    setStatus('ok', 'ok');
    body.dataset.status = 'ok';
  } else {
    for (const e of errors) console.error(e);
    const e = errors[0];
    const text = errorText(e);
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
  initGenerationControls();
  initMachineControls();
  run();
}

try {
  init();
} catch (e) {
  document.body.dataset.status = 'error';
  setStatus('error', `${e.name}: ${e.message}`);
}
