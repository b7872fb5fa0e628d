// The benchmark itself, shared by Node (bench/prefill/run.mjs) and Chromium (bench/browser/main.mjs):
// the libraries come in as arguments, so this file has no imports of its own but the ONNX
// builder, the table formatter, the tests' seeded values and their case list. See bench/README.md.
//
// One cell = (library, shape, mask). Same weights and input for all three libraries:
//   webattention     MultiHeadAttention.forward(x, x, x, { isCausal }), B = 1
//   onnxruntime-web  wasm EP, graph from onnx_model.mjs (contrib MHA op or plain ops)
//   onnxruntime-web-webgpu  (browser --webgpu only) the same graphs on ORT's webgpu EP
//   tfjs-wasm        @tensorflow/tfjs-backend-wasm, MHA from tf ops (matMul, add, split or
//                    reshape, transpose, softmax, additive -inf causal band), see tfCell
// Every library first runs 0.5 s untimed on the first shape (engine tier-up). Then, per (shape,
// mask), each library's cell checks one output and warms up, and the cells are timed in rounds
// of one call each (see timeInterleaved(); with --threads > 1 one library after the other):
// the median and the best of its timed runs.
// Each timed call is a whole forward from a JS Float32Array to a JS Float32Array (input copy-in
// and output copy-out included, as a user sees it).
import { buildMhaModel, causalMask } from './onnx_model.mjs';
import { markdownTable, plainTable } from './table.mjs';
// The tests' seeded values and case list (the bench may import the tests' helpers, never the
// reverse).
import { perfCases } from '../../tests/cases/cases.mjs';
import { filled } from '../../tests/contract/random.mjs';

export { filled };

/**
 * The MHA forward shapes [L, E, h] that bench `bench` times, from the one case list
 * (tests/cases/kernel_cases.json, perf mode; with `quick`, those its --quick keeps).
 */
export const mhaShapes = (bench, { quick = false } = {}) =>
  perfCases('mha', bench, { quick }).map((c) => [c.L, c.embedDim, c.heads]);
export const SHAPES = mhaShapes('run');
export const QUICK_SHAPES = mhaShapes('run', { quick: true });
export const DIFF_LIMIT = 1e-3;

/** FLOPs of one MHA forward, the same count with or without the causal mask. */
export const flops = (L, E) => 8 * L * E * E + 4 * L * L * E;

/** PyTorch-layout state dict for embedDim E; weights ~ U(±1/√E) so that scores are O(1). */
export function makeWeights(E, seed = 1) {
  const w = 1 / Math.sqrt(E);
  return {
    in_proj_weight: filled(3 * E * E, seed, w),
    in_proj_bias: filled(3 * E, seed + 1, 0.1),
    'out_proj.weight': filled(E * E, seed + 2, w),
    'out_proj.bias': filled(E, seed + 3, 0.1),
  };
}

export function maxAbsDiff(a, b) {
  if (!a || !b || a.length !== b.length) return NaN;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (!(d <= m)) m = d;  // NaN propagates
  }
  return m;
}

const now = () => performance.now();

/**
 * Runs fn once (its output is returned for the check), warms it up and says how many timed runs
 * fit in budgetMs: runs = clamp(budgetMs / warm time, minRuns, maxRuns).
 */
async function warmUp(fn, { budgetMs, minRuns = 3, maxRuns = 200 }) {
  const output = await fn();
  let warmSpent = 0, warmCount = 0, tWarm = Infinity;
  while (warmCount < 2 || (warmSpent < Math.min(200, budgetMs / 10) && warmCount < 20)) {
    const t0 = now();
    await fn();
    const t = now() - t0;
    tWarm = Math.min(tWarm, t);
    warmSpent += t;
    warmCount++;
    if (t > budgetMs / 4) break;    // slow cell: one warm-up run is enough
  }
  return { output, runs: Math.max(minRuns, Math.min(maxRuns, Math.floor(budgetMs / Math.max(tWarm, 1e-3)))) };
}

/**
 * Times cells ({ fn, runs, times: [] }) in rounds, one call of each per round, until each has
 * its runs (a cell that throws gets `error` and drops out). This machine's speed drifts, by up
 * to 2× for seconds at a time: interleaved, a slow spell hits every library alike, where timing
 * one library after the other would pin it on whichever happened to be running.
 */
async function timeInterleaved(cells) {
  const pending = () => cells.filter((c) => !c.error && c.times.length < c.runs);
  for (let left = pending(); left.length; left = pending()) {
    for (const cell of left) {
      try {
        const t0 = now();
        await cell.fn();
        cell.times.push(now() - t0);
      } catch (e) {
        cell.error = String(e?.message ?? e).split('\n')[0].slice(0, 200);
      }
    }
  }
}

export function median(sorted) {
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// ---- the three libraries --------------------------------------------------------------------

// --threads N reaches every library: webattention's worker pool included (threads: N).
let oursThreads = 1;

// webattention on `backend` ('wasm', or 'webgpu' for bench/prefill/run.mjs --webgpu: libs.gpu is the npm
// `webgpu` package's GPU in Node, navigator.gpu in the page). Named, not 'auto', so that the WASM
// row stays WASM on a machine with a GPU; a WebGPU cell that fell back to WASM fails rather than
// time the wrong backend.
const oursCell = (backend) => async ({ MultiHeadAttention, gpu }, { L, E, h, weights, x, causal }) => {
  const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h, threads: oursThreads, backend, gpu });
  mha.loadStateDict(weights);
  const t = { data: x, shape: [1, L, E] };
  const opts = { isCausal: causal };
  return {
    fn: async () => {
      const { output } = await mha.forward(t, t, t, opts);
      if (mha.backend !== backend) throw new Error(`the ${backend} backend fell back to ${mha.backend}`);
      return output.data;
    },
    dispose: async () => mha.dispose(),
  };
};

// onnxruntime-web on one execution provider: 'wasm' (libs.ort, graph ortGraph) or 'webgpu'
// (bench/prefill/run.mjs --browser --webgpu: libs.ortGpu is ORT's webgpu bundle,
// dist/ort.webgpu.min.mjs, a second ORT instance beside the wasm one; graph ortWebgpuGraph,
// default 'plain'. The 'contrib' graph (com.microsoft.MultiHeadAttention) does run on ORT 1.30's
// webgpu EP, but on SwiftShader its outputs differ from ours and from ORT's wasm EP by 0.06-0.2
// (max |Δ|); the plain-op graph agrees to ~2e-7). Outputs come back to the CPU (copy-out
// included, like the other rows).
const ortCell = (ep) => async ({ ort, ortGpu }, { L, E, h, weights, x, causal, ortGraph, ortWebgpuGraph }) => {
  const lib = ep === 'webgpu' ? ortGpu : ort;
  const graph = ep === 'webgpu' ? ortWebgpuGraph : ortGraph;
  const model = buildMhaModel({ L, E, numHeads: h, weights, causal, graph });
  const session = await lib.InferenceSession.create(model, {
    executionProviders: [ep], graphOptimizationLevel: 'all',
  });
  return {
    fn: async () => (await session.run({ x: new lib.Tensor('float32', x, [1, L, E]) })).y.data,
    dispose: () => session.release(),
  };
};

// tfjs-backend-wasm 4.22 sends matMul to XNNPACK only for a 2-D (or batch-1) product without
// transposeA/B; everything else (transposeB, batch > 1) goes to a slow loop, about 12x slower
// here. So the default 'per-head' graph keeps every product on the fast path: weights are
// transposed once at setup, Q/K/V are split per head with tf.split, Kᵢᵀ is an explicit transpose.
// 'batched' is the textbook form ([h, L, d] tensors, matMul(q, k, false, true)) for comparison.
async function tfCell({ tf }, { L, E, h, weights, x, causal, tfjsGraph }) {
  const d = E / h;
  const W = weights.in_proj_weight, b = weights.in_proj_bias;
  const t2 = (a, rows, cols) => tf.tensor2d(a, [rows, cols]);
  const held = {
    Wq: t2(W.subarray(0, E * E), E, E),              // PyTorch layout [out, in]
    Wk: t2(W.subarray(E * E, 2 * E * E), E, E),
    Wv: t2(W.subarray(2 * E * E), E, E),
    Wo: t2(weights['out_proj.weight'], E, E),
    bq: tf.tensor1d(b.subarray(0, E)),
    bk: tf.tensor1d(b.subarray(E, 2 * E)),
    bv: tf.tensor1d(b.subarray(2 * E)),
    bo: tf.tensor1d(weights['out_proj.bias']),
    scale: tf.scalar(1 / Math.sqrt(d)),
    mask: causal ? t2(causalMask(L), L, L) : null,   // additive: 0 / -inf band
  };
  for (const n of ['Wq', 'Wk', 'Wv', 'Wo']) {       // [in, out] copies for the fast path
    held[`${n}T`] = tf.transpose(held[n]);
  }
  let forward;
  if (tfjsGraph === 'per-head') {
    forward = (xt) => {
      const q = tf.add(tf.matMul(xt, held.WqT), held.bq);                       // [L, E]
      const k = tf.add(tf.matMul(xt, held.WkT), held.bk);
      const v = tf.add(tf.matMul(xt, held.WvT), held.bv);
      const qs = tf.split(q, h, 1), ks = tf.split(k, h, 1), vs = tf.split(v, h, 1);  // h × [L, d]
      const outs = qs.map((qi, i) => {
        let s = tf.mul(tf.matMul(qi, tf.transpose(ks[i])), held.scale);         // [L, L]
        if (held.mask) s = tf.add(s, held.mask);
        return tf.matMul(tf.softmax(s), vs[i]);                                 // [L, d]
      });
      return tf.add(tf.matMul(tf.concat(outs, 1), held.WoT), held.bo);          // [L, E]
    };
  } else if (tfjsGraph === 'batched') {
    const heads = (t) => tf.transpose(tf.reshape(t, [L, h, d]), [1, 0, 2]);     // [h, L, d]
    forward = (xt) => {
      const q = heads(tf.add(tf.matMul(xt, held.Wq, false, true), held.bq));
      const k = heads(tf.add(tf.matMul(xt, held.Wk, false, true), held.bk));
      const v = heads(tf.add(tf.matMul(xt, held.Wv, false, true), held.bv));
      let s = tf.mul(tf.matMul(q, k, false, true), held.scale);                 // [h, L, L]
      if (held.mask) s = tf.add(s, held.mask);
      const o = tf.matMul(tf.softmax(s), v);                                    // [h, L, d]
      const merged = tf.reshape(tf.transpose(o, [1, 0, 2]), [L, E]);
      return tf.add(tf.matMul(merged, held.Wo, false, true), held.bo);
    };
  } else {
    throw new Error(`tfjs graph must be 'per-head' or 'batched', got '${tfjsGraph}'`);
  }
  return {
    fn: async () => {
      const y = tf.tidy(() => forward(tf.tensor2d(x, [L, E])));
      const data = await y.data();
      y.dispose();
      return data;
    },
    dispose: () => Object.values(held).forEach((t) => t?.dispose()),
  };
}

export const LIBRARIES = [
  { name: 'webattention', make: oursCell('wasm') },
  { name: 'webattention-webgpu', make: oursCell('webgpu'), webgpu: true },
  { name: 'onnxruntime-web', make: ortCell('wasm') },
  { name: 'onnxruntime-web-webgpu', make: ortCell('webgpu'), webgpu: true, needs: 'ortGpu' },
  { name: 'tfjs-wasm', make: tfCell },
];

/**
 * Sets the peers' thread counts and backends. libs: { MultiHeadAttention, ort, tf, tfwasm }.
 * Returns what each library reports (versions, actual threads).
 */
export async function setupLibraries(libs, { threads }) {
  const { ort, tf, tfwasm, capabilities } = libs;
  oursThreads = threads;
  ort.env.wasm.numThreads = threads;
  ort.env.logLevel = 'error';
  if (libs.ortGpu) {
    libs.ortGpu.env.wasm.numThreads = threads;
    libs.ortGpu.env.logLevel = 'error';
  }
  tfwasm.setThreadsCount(threads);
  if (!(await tf.setBackend('wasm'))) throw new Error('tf.setBackend("wasm") failed');
  await tf.ready();
  let ours = 'single-threaded';
  if (typeof capabilities === 'function') {   // newer builds say which module they loaded
    const c = await capabilities();
    ours = `module '${c.wasmModule ?? '?'}', threads: ${threads} (of ${c.threads ?? '?'} available)`;
  }
  let webgpu = null;
  if (libs.gpu) {
    const adapter = await libs.gpu.requestAdapter();
    if (!adapter) throw new Error('--webgpu: requestAdapter() found no WebGPU adapter');
    const i = adapter.info ?? {};
    const software = Boolean(i.isFallbackAdapter || adapter.isFallbackAdapter || /swiftshader|llvmpipe|warp/i.test(`${i.architecture} ${i.description}`));
    webgpu = { adapter: [i.vendor, i.architecture, i.device, i.description].filter(Boolean).join(' / '), software };
  }
  return {
    ours,
    webgpu,
    ort: ort.env.versions?.web ?? ort.env.versions?.common ?? '?',
    ortWebgpu: libs.ortGpu ? (libs.ortGpu.env.versions?.web ?? libs.ortGpu.env.versions?.common ?? '?') : null,
    ortThreadsRequested: threads,
    tfjs: tf.version_core,
    tfjsBackend: tf.getBackend(),
    tfjsThreads: tfwasm.getThreadsCount(),
    tfjsSimd: await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'),
    tfjsThreadsSupported: await tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'),
  };
}

/**
 * Runs every (shape, mask, library) cell. Returns the result rows:
 *   { library, L, E, h, mask, ms (median), best (fastest run), gflops (from ms), runs, maxDiff,
 *   speedup (peer ms / ours ms), error }.
 */
export async function runSuite(libs, { shapes = SHAPES, budgetMs = 2000, ortGraph = 'contrib', ortWebgpuGraph = 'plain', tfjsGraph = 'per-head',
  webgpuMaxGflop = Infinity, log = () => {} } = {}) {
  // webattention-webgpu only with libs.gpu, and only on shapes up to webgpuMaxGflop.
  // onnxruntime-web-webgpu also needs libs.ortGpu (the page's ORT webgpu bundle; not in Node).
  const librariesFor = (L, E) => LIBRARIES.filter((lib) => (!lib.needs || libs[lib.needs])
    && (!lib.webgpu || (libs.gpu && flops(L, E) <= webgpuMaxGflop * 1e9)));
  // Untimed warm-up of every library (first shape, 0.5 s each): engines compile WASM with a
  // baseline tier first and optimize hot functions later, which would otherwise slow the first
  // cells down.
  {
    const [L, E, h] = shapes[0];
    const weights = makeWeights(E, 1), x = filled(L * E, 2, 1);
    for (const { name, make } of librariesFor(L, E)) {
      let cell = null;
      try {
        cell = await make(libs, { L, E, h, weights, x, causal: false, ortGraph, ortWebgpuGraph, tfjsGraph });
        for (const t0 = now(); now() - t0 < 500;) await cell.fn();
      } catch (e) {
        log(`warm-up of ${name} failed: ${String(e?.message ?? e).split('\n')[0]}`);
      } finally {
        try { await cell?.dispose(); } catch { /* ignore */ }
      }
    }
  }
  const rows = [];
  for (const [L, E, h] of shapes) {
    const weights = makeWeights(E, 1000 + E);
    const x = filled(L * E, 7 + L, 1);
    for (const causal of [false, true]) {
      const mask = causal ? 'causal' : 'none';
      const cells = [];  // one per library: { name, fn, dispose, output, runs, times, error }
      for (const { name, make } of librariesFor(L, E)) {
        const cell = { name, times: [], runs: 0 };
        cells.push(cell);
        try {
          Object.assign(cell, await make(libs, { L, E, h, weights, x, causal, ortGraph, ortWebgpuGraph, tfjsGraph }));
          Object.assign(cell, await warmUp(cell.fn, { budgetMs }));
        } catch (e) {
          cell.error = String(e?.message ?? e).split('\n')[0].slice(0, 200);
        }
      }
      // Interleaved on one thread only: with --threads > 1, a thread pool that spins after its
      // call (ORT's do) would take the second core from the next library's call.
      if (oursThreads === 1) await timeInterleaved(cells);
      else for (const cell of cells) await timeInterleaved([cell]);
      let ours = null;
      for (const cell of cells) {
        const row = { library: cell.name, L, E, h, mask, ms: NaN, best: NaN, gflops: NaN, runs: 0, maxDiff: NaN, speedup: NaN };
        if (cell.error) {
          row.error = cell.error;
        } else {
          const times = [...cell.times].sort((a, b) => a - b);
          Object.assign(row, { ms: median(times), best: times[0], runs: times.length });
          row.gflops = flops(L, E) / (row.ms * 1e6);
          if (cell.name === 'webattention') {
            ours = { output: Float32Array.from(cell.output), ms: row.ms };
            row.maxDiff = 0;
          } else if (ours) {
            row.maxDiff = maxAbsDiff(cell.output, ours.output);
            row.speedup = row.ms / ours.ms;
          }
        }
        try { await cell.dispose?.(); } catch { /* ignore */ }
        rows.push(row);
        log(formatRow(row));
      }
    }
  }
  return rows;
}

// ---- output ---------------------------------------------------------------------------------

const shapeText = (r) => `(${r.L}, ${r.E}, ${r.h})`;
const fixed = (v, n) => (Number.isFinite(v) ? v.toFixed(n) : '-');
const diffText = (r) => (r.library === 'webattention' ? 'ref' : Number.isNaN(r.maxDiff) ? 'NaN' : r.maxDiff.toExponential(1))
  + (r.maxDiff > DIFF_LIMIT || (r.library !== 'webattention' && Number.isNaN(r.maxDiff) && !r.error) ? ' !' : '');
const speedText = (r) => (r.library === 'webattention' ? '1' : Number.isFinite(r.speedup) ? r.speedup.toFixed(2) : '-');

const COLUMNS = [
  ['library', (r) => r.library, 'l'],
  ['shape (L, E, h)', shapeText, 'l'],
  ['mask', (r) => r.mask, 'l'],
  ['ms', (r) => fixed(r.ms, r.ms < 10 ? 3 : 1), 'r'],
  ['best ms', (r) => fixed(r.best, r.best < 10 ? 3 : 1), 'r'],
  ['GFLOP/s', (r) => fixed(r.gflops, 1), 'r'],
  ['ours/peer', speedText, 'r'],
  ['max|Δ| vs ours', diffText, 'r'],
  ['runs', (r) => String(r.runs), 'r'],
];

export function formatRow(r) {
  const cells = COLUMNS.map(([, f]) => f(r));
  return cells.join('  ') + (r.error ? `  ERROR: ${r.error}` : '');
}

/** Plain-text table (fixed-width columns). */
export function formatTable(rows) {
  return plainTable(COLUMNS, rows, {
    breakAfter: (r, next) => next.L !== r.L || next.mask !== r.mask,
    suffix: (r) => (r.error ? `  ERROR: ${r.error}` : ''),
  });
}

/** Markdown table (for docs/performance/prefill.md#prefill). */
export function formatMarkdown(rows) {
  return markdownTable(COLUMNS, rows, {
    edit: (r, cells) => {
      if (r.library === 'webattention') cells[0] = '**webattention**';
      if (r.error) cells[cells.length - 1] += ` (error: ${r.error.replace(/\|/g, '\\|')})`;
      return cells;
    },
  });
}
