// Copied into the temp Vite app as main.js: imports the installed package the way a user would;
// the result goes to window.__waReport for tests/package/run.mjs to read.
import * as api from 'webattention';
import { MultiHeadAttention } from 'webattention';
import { runBadCallCase, runMhaCase } from './parity_case.mjs';
import cases from './cases.json';

async function main() {
  const perturb = Number(new URLSearchParams(location.search).get('perturb') || 0);
  const report = {
    namedImport: typeof MultiHeadAttention === 'function' && MultiHeadAttention === api.MultiHeadAttention,
    exports: Object.keys(api).sort(),
    cases: [],
  };
  for (const c of cases) report.cases.push(await runMhaCase(api, c, { perturb }));
  report.badCall = await runBadCallCase(api, cases[0], { perturb });
  report.pooled = await runMhaCase(api, cases[0], { perturb, threads: 2 });
  return report;
}

main().then(
  (report) => { window.__waReport = { done: true, ...report }; },
  (e) => { window.__waReport = { done: true, error: String(e?.stack ?? e) }; },
).finally(() => {
  document.getElementById('status').textContent = 'done';
});
