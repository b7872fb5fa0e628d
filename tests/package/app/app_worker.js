// Copied into the temp Vite app as app_worker.js: the app's own Web Worker, importing the
// installed package (Vite builds it with its default worker format, 'iife', and no config). It
// runs the same report as the page when main.js posts { perturb, wasmPaths }.
import * as api from 'webattention';
import { buildReport } from './report.mjs';
import cases from './cases.json';

self.onmessage = async ({ data: { perturb, wasmPaths } }) => {
  try {
    if (wasmPaths) api.configure({ wasmPaths });
    self.postMessage({ done: true, ...await buildReport(api, api.MultiHeadAttention, cases, { perturb }) });
  } catch (e) {
    self.postMessage({ done: true, error: String(e?.stack ?? e) });
  }
};
