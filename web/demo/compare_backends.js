// "Compare backends" (#machine-panel): the same MultiHeadAttention forward, seeded self-attention
// [1, L, E] with no mask and no weights returned, on each backend this page has: WASM on one
// thread, WASM with threads (pthreads or the worker pool), WebGPU where there is an adapter, and
// onnxruntime-web as a peer where the bench's dev dependency is installed and served
// (bench/node_modules: never a dependency of the package). Only the repository's page looks for
// it (<body data-peers="bench">): a static copy (scripts/build_demo.mjs) has no bench/, so it
// shows no peer row and requests nothing that is not there. Imported on the button, not on load.
// Sets data-compare (JSON [{ backend, available, ms, gflops, maxDiff, note }]) and
// data-compare-shape ("L,E,h") on <body>.
import { MultiHeadAttention } from './loaded_package.js';
import { $, fmtMs, errorText } from './page.js';
import { SEED, prng, makeStateDict, gaussianTensor } from './seeded_data.js';
import { timeWarm } from './stats.js';
import { forwardFlops } from '../src/base/cost_model.js';

// Where onnxruntime-web would be: the bench's own install, served by the same server as the demo
// (scripts/serve.mjs serves the repository; a static copy of the demo has no bench/).
const ORT_URL = new URL('../../bench/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs', import.meta.url);
const ONNX_MODEL_URL = new URL('../../bench/lib/onnx_model.mjs', import.meta.url);

// A software adapter (SwiftShader: about 0.2 GFLOP/s) would take minutes on the largest shape.
const SOFTWARE_GPU_MAX_FLOPS = 1e9;

const yieldToPaint = () => new Promise((resolve) => setTimeout(resolve, 0));
const maxAbsDiff = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);

/** Times a package module made with `options`; resolves to { output, ms, module: what it ran on }. */
async function timePackage({ E, h }, options, dict, x) {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, ...options });
  try {
    mha.loadStateDict(dict);
    let output;
    const warm = await timeWarm(async () => { ({ output } = await mha.forward(x, x, x)); });
    return { output: output.data, ms: warm.ms, backend: mha.backend, threads: mha.threads };
  } finally {
    mha.dispose();
  }
}

/** onnxruntime-web and the bench's ONNX graph builder, or the reason they are not here. */
async function loadOrt() {
  try {
    const [ort, { buildMhaModel }] = await Promise.all([import(ORT_URL.href), import(ONNX_MODEL_URL.href)]);
    return { ort, buildMhaModel };
  } catch (e) {
    return { missing: `not loaded: bench/node_modules/onnxruntime-web is not served here (cd bench && npm install, then serve the repository with npm start) (${e.message})` };
  }
}

async function timeOrt({ ort, buildMhaModel }, { L, E, h }, dict, x, threads) {
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = 'error';
  const weights = Object.fromEntries(Object.entries(dict).map(([name, t]) => [name, t.data]));
  const model = buildMhaModel({ L, E, numHeads: h, weights, causal: false, graph: 'contrib' });
  const session = await ort.InferenceSession.create(model, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  try {
    let output;
    const warm = await timeWarm(async () => { output = (await session.run({ x: new ort.Tensor('float32', x.data, [1, L, E]) })).y.data; });
    return { output, ms: warm.ms, version: ort.env.versions?.web ?? '?' };
  } finally {
    await session.release();
  }
}

/** Runs every backend at shape "L,E,h" and fills #compare-table. machine: showMachine()'s facts. */
export async function compareBackends(shape, { caps, gpu }) {
  const [L, E, h] = shape.split(',').map(Number);
  const size = { L, E, h };
  const rand = prng(SEED + 13);
  const shapeOnly = await MultiHeadAttention.create({ embedDim: E, numHeads: h });
  const { stateDictShapes, config } = shapeOnly;
  shapeOnly.dispose();
  const dict = makeStateDict(stateDictShapes, rand);
  const x = gaussianTensor([1, L, E], rand);
  const flops = forwardFlops({ B: 1, L, S: L, needWeights: false }, config);
  $('compare-flops').textContent = `${(flops / 1e9).toFixed(3)} GFLOP per forward (the package's count, 8·L·E² + 4·L²·E), `
    + `L = S = ${L}, E = ${E}, h = ${h}, B = 1, no mask.`;

  const rows = [];
  const tbody = $('compare-table').tBodies[0];
  tbody.replaceChildren();
  let reference = null;
  const add = async (backend, run) => {
    $('compare-status').textContent = `running: ${backend}…`;
    await yieldToPaint();
    let row;
    try {
      const r = await run();
      if (r.missing) {
        row = { backend, available: false, note: r.missing };
      } else {
        reference ??= r.output;
        row = { backend: r.label ?? backend, available: true, ms: r.ms, gflops: flops / (r.ms * 1e6), maxDiff: maxAbsDiff(r.output, reference), note: r.note ?? '' };
      }
    } catch (e) {
      row = { backend, available: false, note: `failed: ${errorText(e)}` };
    }
    rows.push(row);
    tbody.append(tableRow(row));
  };

  await add('wasm, 1 thread', async () => ({ ...(await timePackage(size, { threads: 1, backend: 'wasm' }, dict, x)), label: `wasm (${caps.wasmModule}), 1 thread` }));
  await add('wasm + threads', async () => {
    if (caps.threads <= 1) return { missing: 'not run: this browser gives the page one core' };
    const r = await timePackage(size, { threads: caps.threads, backend: 'wasm' }, dict, x);
    const how = caps.wasmModule.startsWith('mt') ? 'pthreads' : 'worker pool';
    return { ...r, label: `wasm (${caps.wasmModule}), ${r.threads} threads (${how})` };
  });
  await add('webgpu', async () => {
    if (gpu.kind === 'none') return { missing: `not run: no WebGPU in this browser (${gpu.text.replace(/^none: /, '')})` };
    if (gpu.kind === 'software' && flops > SOFTWARE_GPU_MAX_FLOPS) {
      return { missing: `not run: this browser's WebGPU is a software one (on the CPU, no GPU) and would take minutes for a layer over ${SOFTWARE_GPU_MAX_FLOPS / 1e9} GFLOP; pick a smaller one` };
    }
    const r = await timePackage(size, { backend: 'webgpu' }, dict, x);
    const note = r.backend === 'webgpu' ? '' : `fell back to ${r.backend}`;
    return { ...r, label: `webgpu${gpu.kind === 'software' ? ' (software adapter)' : ''}`, note };
  });
  if (document.body.dataset.peers === 'bench') await add('onnxruntime-web', async () => {
    const ort = await loadOrt();
    if (ort.missing) return ort;
    const threads = crossOriginIsolated ? caps.threads : 1;  // ORT's threads need shared memory
    const r = await timeOrt(ort, size, dict, x, threads);
    return { ...r, label: `onnxruntime-web ${r.version} (wasm EP, ${threads} thread${threads > 1 ? 's' : ''})`, note: 'peer, from bench/node_modules' };
  });

  $('compare-status').textContent = `done: ${rows.filter((r) => r.available).length} engines compared; max |diff| is against the one-core WebAssembly output`;
  Object.assign(document.body.dataset, { compare: JSON.stringify(rows), compareShape: shape });
  return rows;
}

/** One <tr>: backend, warm time, GFLOP/s, max |diff|; or the reason it did not run. */
function tableRow(row) {
  const tr = document.createElement('tr');
  const th = document.createElement('th');
  th.scope = 'row';
  th.textContent = row.backend;
  tr.append(th);
  const cell = (text, className = 'num') => {
    const td = document.createElement('td');
    td.className = className;
    td.textContent = text;
    tr.append(td);
    return td;
  };
  if (!row.available) {
    cell(row.note, 'why').colSpan = 3;
    return tr;
  }
  cell(fmtMs(row.ms));
  cell(row.gflops.toFixed(1));
  cell(row.maxDiff === 0 ? '0' : row.maxDiff.toExponential(1));
  if (row.note) th.append(Object.assign(document.createElement('span'), { className: 'sub', textContent: ` (${row.note})` }));
  return tr;
}
