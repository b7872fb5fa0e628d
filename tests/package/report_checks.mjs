// What the packed package must report in every app (Node, Vite build, Vite dev server): its
// exports, PyTorch parity of the fixture cases, a ShapeError for a bad call, the worker pool.
import { check } from './reporting.mjs';
import { CASE_NAMES } from './settings.mjs';

/** Checks common to the Node and browser reports. */
export function checkReport(where, report, cases) {
  check(`${where}: named import MultiHeadAttention is the class`, report.namedImport === true);
  const wantExports = ['MultiHeadAttention', 'ShapeError', 'scaledDotProductAttention', 'selfAttention'];
  const missing = wantExports.filter((e) => !report.exports.includes(e));
  check(`${where}: exports ${wantExports.join(', ')}`, missing.length === 0, missing.length ? `missing ${missing.join(', ')}` : '');
  for (const name of CASE_NAMES) {
    const r = report.cases.find((c) => c.name === name);
    const hasWeights = Boolean(cases.find((c) => c.name === name).expected.attnWeights);
    check(`${where}: ${name} output within 1e-4 + 1e-4*|b|`, r?.output?.ok === true, r?.output?.detail ?? 'no result');
    if (hasWeights) {
      check(`${where}: ${name} attnWeights within 1e-4 + 1e-4*|b|`, r?.attnWeights?.ok === true, r?.attnWeights?.detail ?? 'no result');
    }
  }
  const bad = report.badCall;
  check(`${where}: forward() with a wrong query shape rejects with a ShapeError`,
    bad?.rejected === true && bad.name === 'ShapeError' && bad.isInstance !== false,
    bad?.rejected ? `${bad.name}${bad.isInstance ? ' (instanceof ShapeError)' : ''}: ${bad.message}` : 'it resolved');
  check(`${where}: a valid forward() on the same module still works after it`,
    bad?.recovered?.ok === true, bad?.recovered?.detail ?? 'no result');
  const pooled = report.pooled;
  check(`${where}: ${CASE_NAMES[0]} with threads: 2 (worker pool) within 1e-4 + 1e-4*|b|`,
    pooled?.ok === true, pooled?.detail ?? 'no result');
  check(`${where}: the pool's worker started and ran (mha.threads is still 2)`, pooled?.threads === 2,
    `mha.threads = ${pooled?.threads}`);
}
