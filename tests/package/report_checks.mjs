// What the packed package must report in every app (Node, Vite build, Vite dev server): its
// exports, PyTorch parity of the fixture cases, a ShapeError for a bad call, the worker pool or,
// on a cross-origin-isolated page, the pthreads module.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check } from './reporting.mjs';
import { CASE_NAMES, REPO } from './settings.mjs';

// The repository's manifest (the installed package ships the same file).
const MODULES = JSON.parse(readFileSync(join(REPO, 'web/modules.json'), 'utf8')).modules;
const moduleEntry = (name) => MODULES.find((m) => m.name === name);

/**
 * Checks common to the Node and browser reports. threadsModule: the page is cross-origin isolated,
 * so the pthreads module (web/modules.json `threads`) must have loaded and run the threads.
 */
export function checkReport(where, report, cases, { threadsModule = false } = {}) {
  check(`${where}: named import MultiHeadAttention is the class`, report.namedImport === true);
  const wantExports = ['MultiHeadAttention', 'ShapeError', 'scaledDotProductAttention', 'selfAttention', 'configure', 'LoadError'];
  const missing = wantExports.filter((e) => !report.exports.includes(e));
  check(`${where}: exports ${wantExports.join(', ')}`, missing.length === 0, missing.length ? `missing ${missing.join(', ')}` : '');
  const internals = ['formatShape', 'throwCoreError', 'describe', 'errorToData', 'errorFromData'].filter((e) => report.exports.includes(e));
  check(`${where}: exports no internal helper`, internals.length === 0, internals.join(', '));
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
  const module = report.capabilities?.wasmModule;
  if (threadsModule) {
    check(`${where}: cross-origin isolated, the pthreads module loaded`, report.crossOriginIsolated === true
      && moduleEntry(module)?.threads === true, `crossOriginIsolated ${report.crossOriginIsolated}, module '${module}'`);
    check(`${where}: ${CASE_NAMES[0]} with threads: 2 (pthreads) within 1e-4 + 1e-4*|b|`, pooled?.ok === true, pooled?.detail ?? 'no result');
    check(`${where}: the pthreads module runs on its threads (mha.threads >= 2)`, pooled?.threads >= 2, `mha.threads = ${pooled?.threads}`);
    return;
  }
  if (report.crossOriginIsolated !== undefined) {
    check(`${where}: not cross-origin isolated, a single-threaded module loaded`, moduleEntry(module)?.threads === false, `module '${module}'`);
  }
  check(`${where}: ${CASE_NAMES[0]} with threads: 2 (worker pool) within 1e-4 + 1e-4*|b|`,
    pooled?.ok === true, pooled?.detail ?? 'no result');
  check(`${where}: the pool's worker started and ran (mha.threads is still 2)`, pooled?.threads === 2,
    `mha.threads = ${pooled?.threads}`);
}
