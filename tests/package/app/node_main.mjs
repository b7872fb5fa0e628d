// Copied into the temp Node app as main.mjs: imports the installed package the way a user would.
import { readFileSync } from 'node:fs';
import * as api from 'webattention';
import { MultiHeadAttention } from 'webattention';
import { runBadCallCase, runMhaCase } from './parity_case.mjs';

const cases = JSON.parse(readFileSync(new URL('./cases.json', import.meta.url), 'utf8'));
const perturb = Number(process.env.WA_PKG_TEST_PERTURB || 0);
const report = {
  resolved: typeof import.meta.resolve === 'function' ? import.meta.resolve('webattention') : null,  // Node >= 20
  namedImport: typeof MultiHeadAttention === 'function' && MultiHeadAttention === api.MultiHeadAttention,
  exports: Object.keys(api).sort(),
  cases: [],
};
for (const c of cases) report.cases.push(await runMhaCase(api, c, { perturb }));
report.badCall = await runBadCallCase(api, cases[0], { perturb });
report.pooled = await runMhaCase(api, cases[0], { perturb, threads: 2 });
console.log(`REPORT ${JSON.stringify(report)}`);
