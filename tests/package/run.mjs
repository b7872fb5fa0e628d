#!/usr/bin/env node
// User-style packaging test for the `webattention` npm package:
//   1. copy the repository as a clean clone holds it (the files git tracks or would add: no
//      web/dist, no build/, no node_modules), `npm pack` there (its prepack step, scripts/build.sh,
//      builds the WASM modules from scratch) and check what the tarball holds;
//   2. install the tarball into a fresh Node app (outside the repo) and run PyTorch parity
//      fixture cases through `import { MultiHeadAttention } from 'webattention'`;
//   3. install it into a fresh Vite app whose page and own Web Worker import it, `vite build`
//      (default config), serve dist/ over node:http and run the same cases (plus a ShapeError
//      check) in headless Chromium and Firefox ESR (tests/browser/browsers.mjs): plain,
//      cross-origin isolated (the pthreads modules), and with the package's files on another
//      origin (configure({ wasmPaths }));
//   4. run that app under the Vite dev server too (with optimizeDeps.exclude: ['webattention']);
//   5. and without optimizeDeps.exclude, where ready() must reject with a LoadError naming it;
//   6. every fenced code block of the packed README run as a user would paste it: Node blocks in
//      an `npm init -y` project, browser blocks in Chromium, Vite blocks through `vite build` and
//      the dev server (readme_part.mjs; alone: node tests/package/readme.mjs).
//
//   node tests/package/run.mjs        (needs Emscripten, as scripts/build.sh does; about as long
//                                      as a full build more than the parts below)
//
// Exits non-zero on any failure; the last line is "N passed, M failed".
// CHROMIUM=/path/to/chromium, FIREFOX=/path/to/firefox: other browser binaries, BROWSERS=chromium: one
// engine alone (as for tests/browser/).
// WA_PKG_TEST_PERTURB=<number> adds that to the first expected output value in both apps, to see
// the comparison fail (a self-test of this harness).
//
// This file drives the parts; each lives in its own module: pack.mjs (1), node_app.mjs (2),
// vite_app.mjs (3, 4, 5), readme_part.mjs (6); apps.mjs sets up the temp apps, report_checks.mjs checks what they report,
// reporting.mjs tallies, processes.mjs runs commands and cleans up, settings.mjs holds the paths,
// cases and time limits.
import { join } from 'node:path';
import { loadCases } from './apps.mjs';
import { makeTempRoot } from './files.mjs';
import { nodePart } from './node_app.mjs';
import { packPart } from './pack.mjs';
import { cleanup, killChildren } from './processes.mjs';
import { readmePart } from './readme_part.mjs';
import { Abort, check, finish } from './reporting.mjs';
import { PERTURB, REPO, TOTAL_TIMEOUT_MS } from './settings.mjs';
import { devServerPart, devServerWithoutExcludePart, installWebApp, viteBuildPart } from './vite_app.mjs';

// A hang anywhere fails the run instead of stalling CI.
const watchdog = setTimeout(async () => {
  check(`whole run finished within ${TOTAL_TIMEOUT_MS / 1000} s`, false, 'watchdog fired');
  killChildren();
  await cleanup();
  finish();
}, TOTAL_TIMEOUT_MS);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    check('not interrupted', false, sig);
    killChildren();
    await cleanup();
    finish();
  });
}

async function main() {
  console.log(`webattention package test (repo ${REPO}, node ${process.version})`);
  if (PERTURB) console.log(`WA_PKG_TEST_PERTURB=${PERTURB}: expected outputs are perturbed, parity checks should FAIL`);
  const cases = loadCases();
  const root = makeTempRoot();
  let tarball;
  try {
    tarball = await packPart(root);
  } catch (e) {
    if (!(e instanceof Abort)) check('npm pack part ran', false, e.stack);
    return;  // nothing to install
  }
  const attempt = async (name, fn) => {
    try {
      return await fn();
    } catch (e) {
      if (!(e instanceof Abort)) check(`${name} ran`, false, e.stack);
      return null;
    }
  };
  await attempt('Node app part', () => nodePart(root, tarball, cases));
  // The dev-server part runs on the installed app even if the build part fails.
  const webApp = await attempt('vite build part', () => installWebApp(root, tarball, cases));
  if (webApp) await attempt('vite build part', () => viteBuildPart(webApp, cases));
  if (webApp) await attempt('vite dev server part', () => devServerPart(webApp.app, cases));
  if (webApp) await attempt('vite dev server without exclude part', () => devServerWithoutExcludePart(webApp.app));
  await attempt('README part', () => readmePart(root, tarball, join(root, 'clone', 'README.md')));
}

try {
  await main();
} catch (e) {
  check('test harness ran', false, e.stack);
} finally {
  clearTimeout(watchdog);
  await cleanup();
  finish();
}
