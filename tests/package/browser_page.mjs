// One headless Chromium (playwright-core) for the packed-package test's browser apps, and the
// check of one app page: how its .wasm was served, its console, and its report.
import { onCleanup, withTimeout } from './processes.mjs';
import { check, info, require_ } from './reporting.mjs';
import { checkReport } from './report_checks.mjs';
import { BROWSER_TIMEOUT_MS, PERTURB } from './settings.mjs';

let browser = null;  // one headless Chromium for the built app and the dev server
async function getBrowser() {
  if (!browser) {
    // The browser tests' binary (env CHROMIUM) and flags, imported here so that steps 1 and 2
    // run without playwright-core. chromium.launch, not the harness's launchChromium (one
    // persistent profile): browser.newPage() gives each page a fresh context.
    const { CHROMIUM, CHROMIUM_ARGS } = await import('../browser/harness.mjs');
    const { chromium } = await import('playwright-core');
    const launching = chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
    onCleanup(async () => (await launching.catch(() => null))?.close());
    browser = await launching;
  }
  return browser;
}

/**
 * Opens `url` in a fresh page, waits (bounded) for window.__waReport, then checks how the .wasm
 * was served, the console, and the report itself.
 */
export async function runPage(where, url, cases) {
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
