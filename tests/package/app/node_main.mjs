// Copied into the temp Node app as main.mjs: imports the installed package the way a user would.
import { readFileSync } from 'node:fs';
import * as api from 'webattention';
import { MultiHeadAttention } from 'webattention';
import { buildReport } from './report.mjs';

const cases = JSON.parse(readFileSync(new URL('./cases.json', import.meta.url), 'utf8'));
const perturb = Number(process.env.WA_PKG_TEST_PERTURB || 0);
const report = {
  resolved: typeof import.meta.resolve === 'function' ? import.meta.resolve('webattention') : null,  // Node >= 20
  ...await buildReport(api, MultiHeadAttention, cases, { perturb }),
  // The package's own source entry, which the bundle it resolves to is made from, by its file
  // (compared with the report's `exports`).
  sourceExports: Object.keys(await import(new URL('./node_modules/webattention/web/src/node.js', import.meta.url).href)).sort(),
};
console.log(`REPORT ${JSON.stringify(report)}`);
