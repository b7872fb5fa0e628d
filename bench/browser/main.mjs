// Runs bench/suite.mjs in the page; bench/run.mjs --browser reads window.__bench when done.
// Query: ?quick=0|1&threads=N&budget=MS&ortGraph=contrib|plain&tfjsGraph=per-head|batched
import * as webattention from 'webattention';
import * as ort from 'onnxruntime-web';
import * as tf from '@tensorflow/tfjs-core';
import * as tfwasm from '@tensorflow/tfjs-backend-wasm';
import { QUICK_SHAPES, SHAPES, formatTable, runSuite, setupLibraries } from '../suite.mjs';

const q = new URLSearchParams(location.search);
const threads = Number(q.get('threads') ?? 1);
const pre = document.getElementById('log');
const log = (line) => {
  console.log(`[bench] ${line}`);
  pre.textContent += `\n${line}`;
};

window.__bench = { done: false };
try {
  tfwasm.setWasmPaths(new URL('../node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url).href);
  const libs = { MultiHeadAttention: webattention.MultiHeadAttention, capabilities: webattention.capabilities, ort, tf, tfwasm };
  const info = await setupLibraries(libs, { threads });
  const rows = await runSuite(libs, {
    shapes: q.get('quick') === '1' ? QUICK_SHAPES : SHAPES,
    budgetMs: Number(q.get('budget') ?? 2000),
    ortGraph: q.get('ortGraph') ?? 'contrib',
    tfjsGraph: q.get('tfjsGraph') ?? 'per-head',
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
