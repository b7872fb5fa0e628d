// The packed-package test's browser apps in each engine of tests/browser/browsers.mjs (headless
// Chromium and Firefox ESR, one browser of each for every page), and the checks of one app page:
// how its .wasm was served, its console, and its report (the page's and its app worker's).
import { onCleanup, withTimeout } from './processes.mjs';
import { check, info, require_ } from './reporting.mjs';
import { checkReport } from './report_checks.mjs';
import { BROWSER_TIMEOUT_MS, PERTURB } from './settings.mjs';

const browsers = new Map();  // engine → a promise of { newPage, close }, launched on first use
let engines = null;

/** The engines every page runs in (imported here so that steps 1 and 2 run without a browser). */
async function getEngines() {
  engines ??= (await import('../browser/browsers.mjs')).ENGINES;
  return engines;
}

function getBrowser(engine) {
  if (!browsers.has(engine)) {
    const launching = import('../browser/browsers.mjs').then(({ launchBrowser }) => launchBrowser(engine));
    onCleanup(async () => (await launching.catch(() => null))?.close());
    browsers.set(engine, launching);
  }
  return browsers.get(engine);
}

/** The app pages' end: window.__waReport, once it says it is done. */
async function waitForReport(page) {
  try {
    await page.waitForFunction(() => window.__waReport?.done === true, null, { timeout: 45_000 });
  } catch (e) {
    const waiting = await page.evaluate(() => window.__waWaitingForWorker === true).catch(() => false);
    throw new Error(`${e.message}${waiting ? `; ${WORKER_NEVER_ANSWERED}` : ''}`);
  }
  return page.evaluate(() => window.__waReport);
}

// Firefox under WebDriver BiDi hangs, now and then, a worker inside `new Worker()` when that worker
// starts workers of its own (the app worker's pthreads or pool workers): its Remote Agent watches
// every worker's start. An app page whose own cases finished and whose worker never answered is
// opened again in Firefox, at most this often. Measured with Firefox ESR 153: 4-7 of 150
// isolated pages under puppeteer-core, 0 of 210 in the same Firefox without automation.
const WORKER_NEVER_ANSWERED = 'the page\'s own cases finished; its app worker never answered';
const FIREFOX_WORKER_RETRIES = 2;

/**
 * Opens `url` in a fresh page of `engine` and waits (bounded) for `settle(page, { consoleLines,
 * pageErrors })` (by default the app pages' window.__waReport): { report (what settle returned),
 * responses, consoleLines, pageErrors }.
 */
export async function openPage(engine, where, url, settle = waitForReport) {
  const responses = [];
  const consoleLines = [];
  const pageErrors = [];
  let page;
  const report = await withTimeout((async () => {
    page = await (await getBrowser(engine)).newPage();
    page.on('response', (res) => responses.push({ url: res.url(), status: res.status(), type: res.headers()['content-type'] }));
    // A failed resource's console line does not name it; its location does.
    page.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}${/^Failed to load resource/.test(m.text()) ? ` (${m.location().url})` : ''}`));
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(url, { timeout: 20_000 });
    return settle(page, { consoleLines, pageErrors });
  })(), BROWSER_TIMEOUT_MS, `${where} page`).catch((e) => ({ error: String(e?.message ?? e) }));
  await withTimeout(page?.close() ?? Promise.resolve(), 10_000, 'page.close').catch(() => {});
  for (const l of consoleLines.filter((l) => !l.startsWith('debug: [vite]'))) info(`${where} console ${l}`);
  return { report, responses, consoleLines, pageErrors };
}

const withQuery = (url, query) => {
  const u = new URL(url);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u.href;
};

/**
 * Opens the app page at `url` and checks how its .wasm was served, the console, and the report
 * of the page and of its app worker. expect: { wasmPaths (a base URL: configure({ wasmPaths })
 * on the page and in the worker, and every .wasm must come from there), threadsModule (the page
 * is cross-origin isolated: the pthreads module must run) }.
 */
export async function runPage(page, url, cases, options = {}) {
  for (const engine of await getEngines()) await runPageIn(engine, `${page} [${engine}]`, url, cases, options);
}

async function runPageIn(engine, where, url, cases, { wasmPaths, threadsModule = false }) {
  const query = { ...(PERTURB ? { perturb: PERTURB } : {}), ...(wasmPaths ? { wasmPaths } : {}) };
  let opened = await openPage(engine, where, withQuery(url, query));
  for (let retry = 1; retry <= FIREFOX_WORKER_RETRIES && engine === 'firefox' && opened.report?.error?.includes(WORKER_NEVER_ANSWERED); retry += 1) {
    info(`${where}: ${WORKER_NEVER_ANSWERED} (Firefox's Remote Agent: see FIREFOX_WORKER_RETRIES); opening it again, try ${retry + 1}`);
    opened = await openPage(engine, where, withQuery(url, query));
  }
  const { report, responses, consoleLines, pageErrors } = opened;

  const wasmResponses = responses.filter((r) => new URL(r.url).pathname.endsWith('.wasm'));
  // A 304 is the browser revalidating the 200 it cached (Firefox reports it as such when the app
  // worker asks for the file the page already has, under the Vite dev server's ETags).
  const served = wasmResponses.filter((r) => r.status !== 304);
  check(`${where}: page fetched the .wasm: 200 with content-type application/wasm (or 304, its cached copy)`,
    served.length >= 1 && served.every((r) => r.status === 200 && r.type === 'application/wasm'),
    wasmResponses.map((r) => `${new URL(r.url).pathname} ${r.status} ${r.type}`).join(', ') || 'no .wasm request');
  if (wasmPaths) {
    check(`${where}: every .wasm came from configure({ wasmPaths }) (${wasmPaths})`,
      wasmResponses.length >= 1 && wasmResponses.every((r) => r.url.startsWith(wasmPaths)),
      wasmResponses.map((r) => r.url).join(', '));
  }
  const bad = responses.filter((r) => r.status >= 400);
  check(`${where}: no page errors, console errors, webattention warnings, wasm streaming fallback or HTTP errors`,
    pageErrors.length === 0 && bad.length === 0
      && !consoleLines.some((l) => /streaming compile failed|falling back|^error:|^warning: webattention/.test(l)),
    [...pageErrors, ...consoleLines.filter((l) => /^(error|warning):/.test(l)),
      ...bad.map((r) => `${r.status} ${new URL(r.url).pathname}`)].join(' | '));
  require_(`${where}: page finished and reported`, report && !report.error, report?.error ?? '');
  checkReport(where, report, cases, { threadsModule });
  const worker = report.worker;
  if (check(`${where}: the app's own worker imported the package and reported`, worker?.done === true && !worker.error, worker?.error ?? '')) {
    checkReport(`${where} app worker`, worker, cases, { threadsModule });
  }
}

/**
 * Opens the app page in its ?mode=load-error (it only awaits ready()) where the package's files
 * are not served (Vite's dev server pre-bundling it): ready() must reject with a LoadError whose
 * message names the fix.
 */
export async function runLoadErrorPage(page, url) {
  for (const engine of await getEngines()) await runLoadErrorPageIn(engine, `${page} [${engine}]`, url);
}

async function runLoadErrorPageIn(engine, where, url) {
  const { report } = await openPage(engine, where, withQuery(url, { mode: 'load-error' }));
  require_(`${where}: page finished and reported`, report && !report.error, report?.error ?? '');
  const e = report.loadError;
  check(`${where}: ready() rejects with a LoadError (instanceof LoadError) naming optimizeDeps.exclude and wasmPaths`,
    e?.name === 'LoadError' && e.isLoadError === true && /optimizeDeps: \{ exclude: \['webattention'\] \}/.test(e.message)
      && /not a WebAssembly module|could not be fetched/.test(e.message) && /wasmPaths/.test(e.message),
    e ? `${e.name}: ${e.message}` : 'ready() resolved');
}
