// The text-generation panel, the page's first: the trained char-level GPT of web/model/ (weights
// fetched from this server when the page opens, so the panel can name the characters the model
// knows) continues the prompt. Characters stream into the page with the speed, the backend the
// attention actually ran on, and where each head looked (generation_attention.js). It samples by
// default (web/model/sampling.js SAMPLING_DEFAULTS), greedy on request.
// For tests, <body> gets data-gen-status = running | done | error, data-gen-text (the
// continuation), data-gen-tokens-per-s, data-gen-backend ("wasm, 1 thread"), data-gen-vocab (the
// model's characters, once fetched) and data-gen-runs (runs finished, done or not: a test waits
// for it to change); pointing at a character sets data-gen-marked and data-gen-window-keys.
import { GpuBatch, GpuStep, MultiHeadAttention, loadSafetensors, loadPackage } from './loaded_package.js';
import { $, errorText } from './page.js';
import { probeGpu } from './machine_panel.js';
import { AttentionRows, prepareHeatmaps, startView, addCharacter, drawHeatmaps, clearView, initAttentionView } from './generation_attention.js';
import { SAMPLING_DEFAULTS } from '../model/sampling.js';

const MODEL_URL = new URL('../model/model.safetensors', import.meta.url);
// The switch's choices as create() options. Decoding is one character per call, too little work
// to share between threads, so the WASM choice is one thread; WebGPU runs the same GQA and
// rotary attention where the browser has an adapter.
// 'webgpu-model': the whole model on the GPU (web/model/char_gpt_gpu.js), a GpuStep a character;
// the attention's weights stay on the GPU, so its heatmaps are left blank.
const BACKENDS = {
  wasm: { threads: 1, backend: 'wasm' },
  webgpu: { backend: 'webgpu' },
  'webgpu-model': { backend: 'webgpu', wholeModel: true },
};
// Let the page paint the streamed text and heatmaps every 40 ms, or less often when redrawing the
// heatmaps takes long (many rows), so that drawing stays under a fifth of the time.
const PAINT_EVERY_MS = 40;
const PAINT_SHARE = 0.2;
const FACT_IDS = ['gen-count', 'gen-speed', 'gen-wall', 'gen-backend'];

let runner = null;           // web/model's modules, imported on the first Generate
let weights = null;          // a promise of the file's bytes, fetched once
let loaded = null;           // { key, model } for the backend choice it was made with
let running = false;
let stopRequested = false;

function fetchWeights() {
  weights ??= fetch(MODEL_URL).then(async (response) => {
    if (!response.ok) throw new Error(`${MODEL_URL.pathname}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  });
  weights.catch(() => { weights = null; });  // a failed fetch is tried again by the next run
  return weights;
}

async function modelFor(key) {
  if (loaded?.key === key) return loaded.model;
  loaded?.model.dispose();
  loaded = null;
  await loadPackage();
  runner ??= await Promise.all([import('../model/char_gpt.js'), import('../model/char_gpt_gpu.js'), import('../model/generate.js')])
    .then(([{ CharGpt }, { CharGptGpu }, { generate }]) => ({ CharGpt, CharGptGpu, generate }));
  const { wholeModel, ...options } = BACKENDS[key];
  const Model = wholeModel ? runner.CharGptGpu : runner.CharGpt;
  const model = await Model.load({ MultiHeadAttention, loadSafetensors, GpuStep, GpuBatch }, await fetchWeights(), options);
  loaded = { key, model };
  return model;
}

/** The model's characters, as the page shows them (newline and space made visible). */
async function showAlphabet() {
  await loadPackage();
  const vocab = loadSafetensors(await fetchWeights()).metadata.get('vocab');
  const visible = { '\n': '↵', ' ': '␣' };
  $('gen-alphabet').textContent = Array.from(vocab, (c) => visible[c] ?? c).join('');
  $('gen-alphabet-count').textContent = String(Array.from(vocab).length);
  document.body.dataset.genVocab = vocab;
}

function readForm() {
  const form = $('gen-controls');
  const number = (name, lo, hi, integer) => {
    const text = form.elements[name].value;
    const v = Number(text);
    if (text.trim() === '' || !Number.isFinite(v) || v < lo || v > hi || (integer && !Number.isInteger(v))) {
      throw new RangeError(`${name}: expected ${integer ? 'an integer' : 'a number'} in ${lo}..${hi}, got '${text}'`);
    }
    return v;
  };
  const greedy = form.elements.greedy.checked;
  return {
    prompt: form.elements.prompt.value,
    backend: form.elements.backend.value,
    options: {
      maxTokens: number('tokens', 1, 2000, true),
      temperature: greedy ? 0 : number('temperature', 0, 10, false),
      topK: greedy ? 0 : number('topK', 0, 1000, true),
      seed: number('seed', 0, 2 ** 31 - 1, true),
    },
  };
}

function show(kind, text) {
  const el = $('gen-status');
  el.textContent = text;
  el.className = `status ${kind}`;
  document.body.dataset.genStatus = kind === 'ok' ? 'done' : kind;
}

/** Forgets the last run: its text, heatmaps, facts and data-gen-* results. */
function clearResults() {
  clearView();
  for (const id of FACT_IDS) $(id).textContent = '–';
  for (const key of ['genText', 'genTokensPerS', 'genBackend', 'genMarked', 'genWindowKeys']) delete document.body.dataset[key];
}

async function runGeneration() {
  const body = document.body;
  running = true;
  stopRequested = false;
  $('gen-run').textContent = 'Stop';
  clearResults();
  show('running', 'loading the model…');
  try {
    const { prompt, backend, options } = readForm();
    const model = await modelFor(backend);
    model.tokenizer.encode(prompt);  // a character the model does not know fails here, before any output
    const { wholeModel } = BACKENDS[backend];
    const ran = wholeModel ? 'webgpu, whole model'
      : model.backend === 'webgpu' ? 'webgpu' : `${model.backend}, ${model.threads} thread${model.threads === 1 ? '' : 's'}`;
    $('gen-backend').textContent = ran;
    const canvases = prepareHeatmaps(model.config);
    const rows = new AttentionRows(model.config, options.maxTokens);
    startView(rows, prompt);
    $('gen-prompt').textContent = prompt;
    show('running', 'generating…');
    let text = '';
    let ms = 0;
    let painted = performance.now();
    let paintMs = 0;
    const started = painted;
    const report = () => {
      $('gen-count').textContent = `${text.length} / ${options.maxTokens}`;
      $('gen-speed').textContent = `${((text.length * 1000) / ms).toFixed(0)} characters/s`;
      $('gen-wall').textContent = `${((performance.now() - started) / 1000).toFixed(2)} s`;
      drawHeatmaps(canvases);
    };
    for await (const step of runner.generate(model, prompt, { ...options, attention: !wholeModel })) {
      text += step.char;
      ms += step.ms;
      if (step.attention) rows.add(step.attention);
      else rows.addBlank();
      addCharacter(step.char);
      if (performance.now() - painted > Math.max(PAINT_EVERY_MS, paintMs / PAINT_SHARE)) {
        const t0 = performance.now();
        report();
        paintMs = performance.now() - t0;
        await new Promise((resolve) => setTimeout(resolve, 0));  // a macrotask: the page paints
        painted = performance.now();
      }
      if (stopRequested) break;
    }
    report();
    Object.assign(body.dataset, { genText: text, genTokensPerS: String((text.length * 1000) / ms), genBackend: ran });
    show('ok', stopRequested ? `stopped after ${text.length} characters` : 'done');
  } catch (e) {
    // A bad form value or prompt is the visitor's to fix, shown on the page; anything else is
    // the page's fault, logged for whoever debugs it.
    if (!(e instanceof RangeError || e?.name === 'OptionError')) console.error(e);
    clearResults();
    show('error', errorText(e));
  } finally {
    running = false;
    $('gen-run').textContent = 'Generate';
    body.dataset.genRuns = String(Number(body.dataset.genRuns ?? 0) + 1);
  }
}

/** The greedy box turns the temperature and top-k fields off (greedy ignores them). */
function syncGreedy() {
  const form = $('gen-controls');
  for (const name of ['temperature', 'topK']) form.elements[name].disabled = form.elements.greedy.checked;
}

/** Offers WebGPU where the page has an adapter (a software one says so). */
async function offerWebGpu() {
  const gpu = await probeGpu();
  for (const value of Object.keys(BACKENDS).filter((key) => BACKENDS[key].backend === 'webgpu')) {
    const option = $('gen-controls').elements.backend.querySelector(`option[value=${value}]`);
    const name = (option.dataset.name ??= option.textContent);  // the page's own name for it
    option.disabled = gpu.kind === 'none';
    option.textContent = gpu.kind === 'none' ? `${name} (no adapter in this browser)`
      : `${name}${gpu.kind === 'software' ? ' (software adapter: slow)' : ''}`;
  }
}

export function initGenerationControls() {
  const form = $('gen-controls');
  for (const [name, value] of Object.entries(SAMPLING_DEFAULTS)) form.elements[name].value = String(value);
  form.elements.greedy.addEventListener('change', syncGreedy);
  syncGreedy();
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    if (running) stopRequested = true;
    else runGeneration();
  });
  initAttentionView();
  showAlphabet().catch((e) => {
    console.error(e);
    $('gen-alphabet').textContent = `(could not read the model: ${errorText(e)})`;
  });
  offerWebGpu().catch((e) => console.error(e));
}
