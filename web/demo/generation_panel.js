// The text-generation panel: the trained char-level GPT of web/model/ (weights fetched from this
// server, so it works offline) continues the prompt; characters stream into the page with the
// tokens/s, the backend the attention actually ran on, and one heatmap per layer and head of
// where each generated character's query looked (rows: generated positions, columns: the 128
// positions of its window, the newest on the right).
// For tests, <body> gets data-gen-status = running | done | error, data-gen-text (the
// continuation), data-gen-tokens-per-s, data-gen-backend ("wasm, 1 thread") and data-gen-runs (runs
// finished, done or not: a test waits for it to change).
import { MultiHeadAttention, loadSafetensors, loadPackage } from './loaded_package.js';
import { $, errorText } from './page.js';
import { heatmap } from './heatmap.js';

const MODEL_URL = new URL('../model/model.safetensors', import.meta.url);
// The switch's choices as create() options. 'auto' runs this model on WASM (and says so below),
// although GQA and rotary attention run on WebGPU too: its KV caches are made at load, before any
// call has found the GPU, and a cache's calls run where it was made.
const BACKENDS = {
  wasm1: { threads: 1, backend: 'wasm' },
  threads: { threads: 'auto', backend: 'wasm' },
  auto: { backend: 'auto' },
};
// Let the page paint the streamed text and heatmaps every 40 ms, or less often when redrawing the
// heatmaps takes long (many rows), so that drawing stays under a fifth of the time.
const PAINT_EVERY_MS = 40;
const PAINT_SHARE = 0.2;

let runner = null;           // web/model's modules, imported on the first Generate (not on page load)
let weights = null;          // the file's bytes, fetched once
let loaded = null;           // { key, model } for the backend choice it was made with
let running = false;
let stopRequested = false;

async function modelFor(key) {
  if (loaded?.key === key) return loaded.model;
  loaded?.model.dispose();
  loaded = null;
  await loadPackage();
  runner ??= await Promise.all([import('../model/char_gpt.js'), import('../model/generate.js')])
    .then(([{ CharGpt }, { generate }]) => ({ CharGpt, generate }));
  if (!weights) {
    const response = await fetch(MODEL_URL);
    if (!response.ok) throw new Error(`${MODEL_URL.pathname}: HTTP ${response.status}`);
    weights = new Uint8Array(await response.arrayBuffer());
  }
  const model = await runner.CharGpt.load({ MultiHeadAttention, loadSafetensors }, weights, BACKENDS[key]);
  loaded = { key, model };
  return model;
}

/** One canvas per layer and head, made once the model's sizes are known. */
function heatCanvases({ layers, numHeads }) {
  const grid = $('gen-heads');
  if (grid.childElementCount !== layers * numHeads) {
    grid.replaceChildren();
    for (let l = 0; l < layers; l++) {
      for (let h = 0; h < numHeads; h++) {
        const figure = document.createElement('figure');
        const canvas = document.createElement('canvas');
        canvas.className = 'gen-heat';
        Object.assign(canvas.dataset, { layer: l, head: h });
        canvas.setAttribute('aria-label', `layer ${l} head ${h} attention`);
        const caption = document.createElement('figcaption');
        caption.textContent = `layer ${l} · head ${h}`;
        figure.append(canvas, caption);
        grid.append(figure);
      }
    }
  }
  return grid.querySelectorAll('canvas');
}

/** Rows of [generated positions, window] per layer·head, each row right-aligned on its query. */
class AttentionRows {
  constructor({ layers, numHeads, window }, maxRows) {
    this.window = window;
    this.rows = 0;
    this.maps = Array.from({ length: layers * numHeads }, () => new Float32Array(maxRows * window));
    this.numHeads = numHeads;
  }

  add({ layers }) {
    layers.forEach((heads, l) => heads.forEach((row, h) => {
      this.maps[l * this.numHeads + h].set(row, (this.rows + 1) * this.window - row.length);
    }));
    this.rows++;
  }

  draw(canvases) {
    if (this.rows === 0) return;
    canvases.forEach((canvas, i) => heatmap(canvas, this.maps[i], this.rows, this.window));
  }
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
  return {
    prompt: form.elements.prompt.value,
    backend: form.elements.backend.value,
    options: {
      maxTokens: number('tokens', 1, 2000, true),
      temperature: number('temperature', 0, 10, false),
      topK: number('topK', 0, 1000, true),
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

async function runGeneration() {
  const body = document.body;
  running = true;
  stopRequested = false;
  $('gen-run').textContent = 'Stop';
  show('running', 'loading the model…');
  for (const key of ['genText', 'genTokensPerS', 'genBackend']) delete body.dataset[key];
  try {
    const { prompt, backend, options } = readForm();
    const model = await modelFor(backend);
    const ran = `${model.backend}, ${model.threads} thread${model.threads === 1 ? '' : 's'}`;
    $('gen-backend').textContent = ran;
    const canvases = heatCanvases(model.config);
    const rows = new AttentionRows(model.config, options.maxTokens);
    $('gen-prompt').textContent = prompt;
    const out = $('gen-out');
    out.textContent = '';
    show('running', 'generating…');
    let text = '';
    let ms = 0;
    let painted = performance.now();
    let paintMs = 0;
    const started = painted;
    const report = () => {
      $('gen-count').textContent = `${text.length} / ${options.maxTokens}`;
      $('gen-speed').textContent = `${((text.length * 1000) / ms).toFixed(1)} tokens/s`;
      $('gen-wall').textContent = `${((performance.now() - started) / 1000).toFixed(2)} s`;
      rows.draw(canvases);
    };
    for await (const step of runner.generate(model, prompt, { ...options, attention: true })) {
      text += step.char;
      ms += step.ms;
      out.textContent = text;
      rows.add(step.attention);
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
    console.error(e);
    show('error', errorText(e));
  } finally {
    running = false;
    $('gen-run').textContent = 'Generate';
    body.dataset.genRuns = String(Number(body.dataset.genRuns ?? 0) + 1);
  }
}

export function initGenerationControls() {
  $('gen-controls').addEventListener('submit', (e) => {
    e.preventDefault();
    if (running) stopRequested = true;
    else runGeneration();
  });
}
