// Runs bench/lib/suite.mjs in the page; bench/prefill/run.mjs --browser reads window.__bench when done.
// Query: ?quick=0|1&threads=N&budget=MS&ortGraph=contrib|plain&tfjsGraph=per-head|batched
//        &webgpu=1 (add the WebGPU rows, navigator.gpu)&webgpuMaxGflop=G&ortWebgpuGraph=plain|contrib
//        &wasm=simd|relaxed|scalar|mt (webattention's module; it is loaded at the first create())
import * as webattention from 'webattention';
import * as ort from 'onnxruntime-web';
import * as tf from '@tensorflow/tfjs-core';
import * as tfwasm from '@tensorflow/tfjs-backend-wasm';
import { QUICK_SHAPES, SHAPES, formatTable, runSuite, setupLibraries } from '../lib/suite.mjs';

const q = new URLSearchParams(location.search);
const threads = Number(q.get('threads') ?? 1);
if (q.get('wasm')) globalThis.WEBATTENTION_WASM = q.get('wasm');
const pre = document.getElementById('log');
const log = (line) => {
  console.log(`[bench] ${line}`);
  pre.textContent += `\n${line}`;
};

window.__bench = { done: false };
try {
  tfwasm.setWasmPaths(new URL('../node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url).href);
  const libs = { MultiHeadAttention: webattention.MultiHeadAttention, capabilities: webattention.capabilities, ort, tf, tfwasm };
  if (q.get('webgpu') === '1') {
    if (!navigator.gpu) throw new Error('--webgpu: no navigator.gpu in this browser (flag --enable-unsafe-webgpu?)');
    libs.gpu = navigator.gpu;
    // onnxruntime-web's webgpu bundle, for the onnxruntime-web-webgpu row (loaded only here).
    try {
      libs.ortGpu = await import('onnxruntime-web/webgpu');
    } catch (e) {
      log(`onnxruntime-web/webgpu failed to load: ${String(e?.message ?? e).split('\n')[0]}`);
    }
  }
  const info = await setupLibraries(libs, { threads });
  // Same default as run.mjs: a software adapter gets the shapes up to 0.5 GFLOP only.
  const webgpuMaxGflop = q.has('webgpuMaxGflop') ? Number(q.get('webgpuMaxGflop')) : info.webgpu?.software ? 0.5 : Infinity;
  const rows = await runSuite(libs, {
    shapes: q.get('quick') === '1' ? QUICK_SHAPES : SHAPES,
    budgetMs: Number(q.get('budget') ?? 2000),
    ortGraph: q.get('ortGraph') ?? 'contrib',
    ortWebgpuGraph: q.get('ortWebgpuGraph') ?? 'plain',
    tfjsGraph: q.get('tfjsGraph') ?? 'per-head',
    webgpuMaxGflop,
    log,
  });
  pre.textContent = formatTable(rows);
  window.__bench = {
    done: true, rows,
    env: { userAgent: navigator.userAgent, crossOriginIsolated, hardwareConcurrency: navigator.hardwareConcurrency, info },
  };
} catch (e) {
  console.error(e);
  window.__bench = { done: true, error: String(e?.stack ?? e) };
}
