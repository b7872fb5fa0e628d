// Copied into the temp Vite app as main.js: imports the installed package the way a user would;
// the result goes to window.__waReport for tests/package/run.mjs to read.
import * as api from 'webattention';
import { MultiHeadAttention } from 'webattention';
import { buildReport } from './report.mjs';
import cases from './cases.json';

async function main() {
  const perturb = Number(new URLSearchParams(location.search).get('perturb') || 0);
  return buildReport(api, MultiHeadAttention, cases, { perturb });
}

main().then(
  (report) => { window.__waReport = { done: true, ...report }; },
  (e) => { window.__waReport = { done: true, error: String(e?.stack ?? e) }; },
).finally(() => {
  document.getElementById('status').textContent = 'done';
});
