// Copied into the temp Vite app as main.js: imports the installed package the way a user would,
// on the page and in the app's own worker (app_worker.js); the result goes to window.__waReport
// for tests/package/run.mjs to read. Query: ?wasmPaths=<url> calls configure({ wasmPaths })
// first (on the page and in the worker); ?mode=load-error only reports how loading fails (the
// dev server without optimizeDeps.exclude); ?perturb=<n> perturbs the expected outputs.
import * as api from 'webattention';
import { MultiHeadAttention } from 'webattention';
import { buildReport } from './report.mjs';
import cases from './cases.json';

const params = new URLSearchParams(location.search);
const perturb = Number(params.get('perturb') || 0);
const wasmPaths = params.get('wasmPaths');

/** The app worker's report (it runs the same cases as the page). */
function runAppWorker() {
  const worker = new Worker(new URL('./app_worker.js', import.meta.url), { type: 'module' });
  return new Promise((resolve) => {
    worker.onmessage = (event) => resolve(event.data);
    worker.onerror = (event) => resolve({ error: `the app worker failed: ${event.message || 'its script could not be loaded'}` });
    worker.postMessage({ perturb, wasmPaths });
  }).finally(() => worker.terminate());
}

async function loadError() {
  try {
    await api.ready();
    return { loadError: null };
  } catch (e) {
    return { loadError: { name: e?.name, message: String(e?.message ?? e), isLoadError: e instanceof api.LoadError } };
  }
}

async function main() {
  if (params.get('mode') === 'load-error') return loadError();
  if (wasmPaths) api.configure({ wasmPaths });
  const report = await buildReport(api, MultiHeadAttention, cases, { perturb });
  // The page's own cases are done: what the harness reads if the worker never answers.
  window.__waWaitingForWorker = true;
  return { ...report, worker: await runAppWorker() };
}

main().then(
  (report) => { window.__waReport = { done: true, ...report }; },
  (e) => { window.__waReport = { done: true, error: String(e?.stack ?? e) }; },
).finally(() => {
  document.getElementById('status').textContent = 'done';
});
