#!/usr/bin/env node
// User-style packaging test for the `webattention` npm package:
//   1. copy the repository as a clean clone holds it (the files git tracks or would add: no
//      web/dist, no build/, no node_modules), `npm pack` there (its prepack step, scripts/build.sh,
//      builds the WASM modules from scratch) and check what the tarball holds;
//   2. install the tarball into a fresh Node app (outside the repo) and run PyTorch parity
//      fixture cases through `import { MultiHeadAttention } from 'webattention'`;
//   3. install it into a fresh Vite app, `vite build` (default config), serve dist/ over node:http
//      and run the same cases (plus a ShapeError check) in headless Chromium (playwright-core);
//   4. run that app under the Vite dev server too (with optimizeDeps.exclude: ['webattention']).
//
//   node tests/package/run.mjs        (needs Emscripten, as scripts/build.sh does; about as long
//                                      as a full build more than the parts below)
//
// Exits non-zero on any failure; the last line is "N passed, M failed".
// CHROMIUM=/path/to/chromium: another browser binary (as for tests/browser/).
// WA_PKG_TEST_PERTURB=<number> adds that to the first expected output value in both apps, to see
// the comparison fail (a self-test of this harness).
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join, normalize, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const FIXTURES = join(REPO, 'tests/fixtures/mha_parity.json');
const VITE = join(REPO, 'node_modules/vite/bin/vite.js');
// The first case is also used for the bad-call (ShapeError) check; both return attention weights.
const CASE_NAMES = ['cross_kdim_vdim', 'kpm_bool_attn_float'];
const PERTURB = Number(process.env.WA_PKG_TEST_PERTURB || 0);
// The clean copy's prepack builds every WASM module (one to a few minutes on two cores).
const BUILD_TIMEOUT_MS = 900_000;
const TOTAL_TIMEOUT_MS = BUILD_TIMEOUT_MS + 180_000;
const BROWSER_TIMEOUT_MS = 60_000;
const REQUIRED_FILES = ['package.json', 'LICENSE', 'README.md', 'web/index.d.ts', 'web/modules.json'];

// ---------------------------------------------------------------------------------------------
// bookkeeping

const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
let passed = 0;
let failed = 0;

function step(title) {
  console.log(`\n[${secs()} s] ${title}`);
}
function info(line) {
  console.log(`  ..   ${line}`);
}
function check(label, ok, detail = '') {
  if (ok) passed += 1;
  else failed += 1;
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${label}${detail ? ` -- ${detail}` : ''}`);
  return ok;
}
/** Thrown to abandon the current part after a failed check it depends on. */
class Abort extends Error {}
function require_(label, ok, detail) {
  if (!check(label, ok, detail)) throw new Abort(label);
}

const cleanups = [];  // run last-in first-out, each at most once
async function cleanup() {
  while (cleanups.length) {
    const fn = cleanups.pop();
    try {
      await withTimeout(Promise.resolve().then(fn), 15_000, 'cleanup step');
    } catch (e) {
      console.log(`  ..   cleanup: ${e.message}`);
    }
  }
}

function finish() {
  console.log(`\n[${secs()} s]\n${passed} passed, ${failed} failed`);  // the last line is the plain "N passed, N failed"
  process.exit(failed || !passed ? 1 : 0);
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const children = new Set();
/** Runs a command (own process group), resolves to { code, stdout, stderr }; kills it on timeout. */
function exec(cmd, args, { cwd, timeoutMs, env = process.env }) {
  return new Promise((resolvePromise) => {
    const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    child.on('error', (e) => { stderr += String(e); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise({ code: timedOut ? 'timeout' : code ?? signal, stdout, stderr, timedOut });
    });
  });
}
function killGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
}
const tail = (s, n = 1500) => (s.length > n ? `...${s.slice(-n)}` : s).trim();
const describeRun = (r) => `exit ${r.code}${r.timedOut ? ' (killed)' : ''}\n${tail(r.stderr || r.stdout)}`;

// A hang anywhere fails the run instead of stalling CI.
const watchdog = setTimeout(async () => {
  check(`whole run finished within ${TOTAL_TIMEOUT_MS / 1000} s`, false, 'watchdog fired');
  for (const c of children) killGroup(c);
  await cleanup();
  finish();
}, TOTAL_TIMEOUT_MS);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    check('not interrupted', false, sig);
    for (const c of children) killGroup(c);
    await cleanup();
    finish();
  });
}

// ---------------------------------------------------------------------------------------------
// helpers

function makeTempRoot() {
  const dir = mkdtempSync(join(tmpdir(), 'webattention-package-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function loadCases() {
  const fixture = JSON.parse(readFileSync(FIXTURES, 'utf8'));
  return CASE_NAMES.map((name) => {
    const c = fixture.cases.find((x) => x.name === name);
    if (!c) throw new Error(`fixture case '${name}' not found in ${relative(REPO, FIXTURES)}`);
    return c;
  });
}

/** A fresh app folder with package.json, the test contract, the report built on it and the cases. */
function makeApp(dir, name, cases) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name, version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`);
  const contract = join(REPO, 'tests/contract');
  mkdirSync(join(dir, 'contract'));
  for (const f of readdirSync(contract)) copyFileSync(join(contract, f), join(dir, 'contract', f));
  copyFileSync(join(HERE, 'app/report.mjs'), join(dir, 'report.mjs'));
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
}

async function npmInstall(appDir, tarball) {
  const base = ['install', tarball, '--no-audit', '--no-fund', '--loglevel=error'];
  let r = await exec('npm', [...base, '--offline'], { cwd: appDir, timeoutMs: 60_000 });
  if (r.code !== 0) {
    info(`npm install --offline failed (${describeRun(r).split('\n')[0]}); retrying without --offline`);
    r = await exec('npm', base, { cwd: appDir, timeoutMs: 60_000 });
  }
  require_(`npm install <tarball> in ${relative(tmpdir(), appDir)}`, r.code === 0, r.code === 0 ? '' : describeRun(r));
  const installed = join(appDir, 'node_modules/webattention');
  require_('installed package has web/dist/webattention_core.wasm',
    existsSync(join(installed, 'web/dist/webattention_core.wasm')));
  return installed;
}

/** Checks common to the Node and browser reports. */
function checkReport(where, report, cases) {
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

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
};

/** Serves `root` on 127.0.0.1 at a free port; resolves to { url, close }. */
function serveStatic(root) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    let file = normalize(join(root, path));
    if (file !== root && !file.startsWith(root + sep)) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html');
    if (!existsSync(file)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const body = readFileSync(file);
    res.writeHead(200, {
      'content-type': MIME[extname(file)] ?? 'application/octet-stream',
      'content-length': body.length,
      'cache-control': 'no-store',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((resolvePromise, reject) => {
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolvePromise({
        url: `http://127.0.0.1:${port}/`,
        close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
      });
    });
  });
}

function listFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath ?? d.path, d.name)).split(sep).join('/'));
}

// ---------------------------------------------------------------------------------------------
// the three parts

/**
 * What a clean clone of the repository holds: the files git tracks (as they are in the working
 * tree, so uncommitted edits are tested too) and the new ones it would add, never ignored ones.
 */
function cleanCopy(dest) {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' });
  const files = [...new Set(listed.split('\0').filter(Boolean))].filter((f) => existsSync(join(REPO, f)) && statSync(join(REPO, f)).isFile());
  for (const f of files) {
    mkdirSync(dirname(join(dest, f)), { recursive: true });
    copyFileSync(join(REPO, f), join(dest, f));
  }
  return files.length;
}

async function packPart(root) {
  step('1/4 clean copy of the repository, npm pack (prepack builds the WASM modules)');
  const clone = join(root, 'clone');
  info(`${cleanCopy(clone)} files copied (what git tracks or would add)`);
  require_('the clean copy has no web/dist (a build output)', !existsSync(join(clone, 'web/dist')));
  const packDir = join(root, 'pack');
  mkdirSync(packDir);
  const r = await exec('npm', ['pack', '--json', '--pack-destination', packDir, '--loglevel=error'], { cwd: clone, timeoutMs: BUILD_TIMEOUT_MS });
  require_('npm pack (with its prepack build) succeeded', r.code === 0, r.code === 0 ? '' : describeRun(r));
  // The prepack build's log comes first on stdout; npm's JSON is the last thing, from a "[" line.
  const json = JSON.parse(r.stdout.slice(r.stdout.search(/^\[$(?![\s\S]*^\[$)/m)));
  const meta = json[0];
  const tarball = join(packDir, meta.filename);
  require_('tarball written', existsSync(tarball), tarball);
  const files = meta.files.map((f) => f.path);
  info(`tarball ${meta.filename}: ${(statSync(tarball).size / 1024).toFixed(1)} KiB packed, `
    + `${(meta.unpackedSize / 1024).toFixed(1)} KiB unpacked, ${files.length} files`);

  for (const f of REQUIRED_FILES) check(`tarball lists ${f}`, files.includes(f));
  const srcJs = readdirSync(join(clone, 'web/src')).filter((f) => f.endsWith('.js')).map((f) => `web/src/${f}`);
  const missingSrc = srcJs.filter((f) => !files.includes(f));
  check(`tarball lists all ${srcJs.length} web/src/*.js`, srcJs.length > 0 && missingSrc.length === 0,
    missingSrc.length ? `missing ${missingSrc.join(', ')}` : srcJs.map((f) => f.slice(8)).join(' '));
  // web/dist as the prepack build left it, whole: every module of web/modules.json and its loaders.
  const built = listFiles(join(clone, 'web/dist')).map((f) => `web/dist/${f}`);
  const missingDist = built.filter((f) => !files.includes(f));
  check(`tarball holds all ${built.length} files the build wrote into web/dist`, built.length > 0 && missingDist.length === 0,
    missingDist.length ? `missing ${missingDist.join(', ')}` : built.map((f) => f.slice(9)).join(' '));
  const { modules } = JSON.parse(readFileSync(join(clone, 'web/modules.json'), 'utf8'));
  const wasms = modules.map((m) => `web/dist/${m.stem}.wasm`);
  const unbuilt = wasms.filter((f) => !(meta.files.find((p) => p.path === f)?.size > 0));
  check(`tarball holds the .wasm of all ${modules.length} modules of web/modules.json, each as built`, unbuilt.length === 0
    && wasms.every((f) => meta.files.find((p) => p.path === f).size === statSync(join(clone, f)).size), unbuilt.join(', '));

  // Every file the package.json points at must ship.
  const pkg = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8'));
  const targets = new Set();
  const walk = (v) => {
    if (typeof v === 'string') targets.add(v.replace(/^\.\//, ''));
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(pkg.exports);
  if (pkg.types) targets.add(pkg.types.replace(/^\.\//, ''));
  if (pkg.main) targets.add(pkg.main.replace(/^\.\//, ''));
  const dangling = [...targets].filter((t) => !files.includes(t));
  check('every exports/types target is in the tarball', dangling.length === 0,
    dangling.length ? `missing ${dangling.join(', ')}` : [...targets].join(' '));
  const stray = files.filter((f) => !(f === 'package.json' || /^(README|LICENSE|CHANGELOG)/i.test(f) || f.startsWith('web/')));
  check('tarball has nothing outside web/ (plus package.json, README, LICENSE)', stray.length === 0, stray.join(', '));
  return tarball;
}

async function nodePart(root, tarball, cases) {
  step('2/4 Node app: npm install <tarball>, import from "webattention"');
  const app = join(root, 'node-app');
  makeApp(app, 'webattention-node-app', cases);
  copyFileSync(join(HERE, 'app/node_main.mjs'), join(app, 'main.mjs'));
  const installed = await npmInstall(app, tarball);
  const r = await exec(process.execPath, ['main.mjs'], {
    cwd: app, timeoutMs: 30_000, env: { ...process.env, WA_PKG_TEST_PERTURB: String(PERTURB) },
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith('REPORT '));
  require_('node main.mjs ran', r.code === 0 && line, r.code === 0 && line ? '' : describeRun(r));
  const report = JSON.parse(line.slice(7));
  const expectedEntry = join(installed, 'web/src/node.js');
  if (report.resolved === null) info('import.meta.resolve unavailable (Node < 20): entry resolution not checked');
  else {
    check('"webattention" resolves to the installed node entry (exports "node" condition)',
      fileURLToPath(report.resolved) === expectedEntry, relative(app, fileURLToPath(report.resolved)));
  }
  checkReport('node', report, cases);
}

let browser = null;  // one headless Chromium for the built app and the dev server
async function getBrowser() {
  if (!browser) {
    // The browser tests' binary (env CHROMIUM) and flags, imported here so that steps 1 and 2
    // run without playwright-core. chromium.launch, not the harness's launchChromium (one
    // persistent profile): browser.newPage() gives each page a fresh context.
    const { CHROMIUM, CHROMIUM_ARGS } = await import('../browser/harness.mjs');
    const { chromium } = await import('playwright-core');
    const launching = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
    cleanups.push(async () => (await launching.catch(() => null))?.close());
    browser = await launching;
  }
  return browser;
}

/**
 * Opens `url` in a fresh page, waits (bounded) for window.__waReport, then checks how the .wasm
 * was served, the console, and the report itself.
 */
async function runPage(where, url, cases) {
  const responses = [];
  const consoleLines = [];
  const pageErrors = [];
  let page;
  const report = await withTimeout((async () => {
    page = await (await getBrowser()).newPage();
    page.on('response', (res) => responses.push({ url: res.url(), status: res.status(), type: res.headers()['content-type'] }));
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(`${url}${PERTURB ? `?perturb=${PERTURB}` : ''}`, { timeout: 20_000 });
    await page.waitForFunction(() => window.__waReport?.done === true, null, { timeout: 30_000 });
    return page.evaluate(() => window.__waReport);
  })(), BROWSER_TIMEOUT_MS, `${where} page`).catch((e) => ({ error: String(e?.message ?? e) }));
  await withTimeout(page?.close() ?? Promise.resolve(), 10_000, 'page.close').catch(() => {});
  for (const l of consoleLines.filter((l) => !l.startsWith('debug: [vite]'))) info(`${where} console ${l}`);

  const wasmResponses = responses.filter((r) => new URL(r.url).pathname.endsWith('.wasm'));
  check(`${where}: page fetched the .wasm: 200 with content-type application/wasm`,
    wasmResponses.length >= 1 && wasmResponses.every((r) => r.status === 200 && r.type === 'application/wasm'),
    wasmResponses.map((r) => `${new URL(r.url).pathname} ${r.status} ${r.type}`).join(', ') || 'no .wasm request');
  const bad = responses.filter((r) => r.status >= 400);
  check(`${where}: no page errors, console errors, wasm streaming fallback or HTTP errors`,
    pageErrors.length === 0 && bad.length === 0
      && !consoleLines.some((l) => /streaming compile failed|falling back|^error:/.test(l)),
    [...pageErrors, ...consoleLines.filter((l) => /^(error|warning):/.test(l)),
      ...bad.map((r) => `${r.status} ${new URL(r.url).pathname}`)].join(' | '));
  require_(`${where}: page finished and reported`, report && !report.error, report?.error ?? '');
  checkReport(where, report, cases);
}

let installedWebApp = null;
async function browserPart(root, tarball, cases) {
  step('3/4 Vite app: npm install <tarball>, vite build, serve dist/, headless Chromium');
  const app = join(root, 'web-app');
  makeApp(app, 'webattention-web-app', cases);
  copyFileSync(join(HERE, 'app/browser_main.js'), join(app, 'main.js'));
  copyFileSync(join(HERE, 'app/index.html'), join(app, 'index.html'));
  const installed = await npmInstall(app, tarball);
  installedWebApp = app;  // the dev-server part runs even if this part fails later

  // No vite.config: a production build must work with Vite's defaults.
  const b = await exec(process.execPath, [VITE, 'build', '--logLevel', 'warn'], { cwd: app, timeoutMs: 60_000 });
  require_('vite build succeeded', b.code === 0, b.code === 0 ? tail(b.stdout + b.stderr, 600) : describeRun(b));
  const dist = join(app, 'dist');
  const built = listFiles(dist);
  info(`dist: ${built.join(' ')}`);
  const wasmAssets = built.filter((f) => f.endsWith('.wasm'));
  // The single-threaded modules (SIMD, relaxed SIMD, scalar fallback) ship; the page fetches
  // only the one it can run. (The pthreads ones are loaded by a URL bundlers do not see.)
  const singleThreaded = JSON.parse(readFileSync(join(installed, 'web/modules.json'), 'utf8')).modules.filter((m) => !m.threads);
  const pkgWasms = singleThreaded.map((m) => readFileSync(join(installed, 'web/dist', `${m.stem}.wasm`)));
  check(`vite emitted the ${singleThreaded.length} single-threaded package .wasm modules as assets, unchanged`,
    wasmAssets.length === singleThreaded.length
    && pkgWasms.every((w) => wasmAssets.some((f) => readFileSync(join(dist, f)).equals(w))), wasmAssets.join(', ') || 'no .wasm in dist');
  const js = built.filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(dist, f), 'utf8')).join('\n');
  check('bundle uses the browser entry (no node:fs / readFile in it)', !/node:fs|readFile\(/.test(js));

  const server = await serveStatic(dist);
  cleanups.push(() => server.close());
  info(`serving dist/ at ${server.url}`);
  await runPage('browser (vite build)', server.url, cases);
}

async function devServerPart(app, cases) {
  step('4/4 same app under the Vite dev server (optimizeDeps.exclude, as Vite needs for this package)');
  // Vite's dependency pre-bundling moves the package's JS to node_modules/.vite/deps/, which
  // breaks new URL('../dist/webattention_core.wasm', import.meta.url) (the dev server answers
  // index.html, "expected magic word"): users must exclude the package, as with any Emscripten
  // module that loads its .wasm this way.
  const { createServer } = await import('vite');
  const server = await withTimeout(createServer({
    root: app,
    configFile: false,
    logLevel: 'warn',
    clearScreen: false,
    optimizeDeps: { exclude: ['webattention'] },
    server: { host: '127.0.0.1', port: 0, strictPort: false, watch: null, hmr: false },
  }), 30_000, 'vite createServer');
  cleanups.push(() => server.close());
  await withTimeout(server.listen(), 30_000, 'vite dev server listen');
  const url = server.resolvedUrls?.local?.[0];
  require_('vite dev server listening', Boolean(url), url);
  info(`vite dev server at ${url}`);
  await runPage('browser (vite dev)', url, cases);
}

// ---------------------------------------------------------------------------------------------

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
  await attempt('vite build part', () => browserPart(root, tarball, cases));
  if (installedWebApp) await attempt('vite dev server part', () => devServerPart(installedWebApp, cases));
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
