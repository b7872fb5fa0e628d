// What the browser tests share: the repo's static server (scripts/serve.mjs, cross-origin
// isolated unless isolated: false), the Chromium binary and flags (browsers.mjs launches it, and
// Firefox: the one launcher of the tests and bench/) and opening the demo page. bench/ uses the
// server too; tests/package/run.mjs takes the Chromium binary and flags.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu-sandbox', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic'];

/** Starts scripts/serve.mjs on a free port; resolves to { child, url }. */
export function startServer({ isolated = true } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts/serve.mjs'), '0'], {
      cwd: ROOT,
      env: { ...process.env, QUIET: '1', HOST: '127.0.0.1', ISOLATED: isolated ? '1' : '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}` });
    });
    child.stderr.on('data', (chunk) => { out += chunk; });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`serve.mjs exited (${code}) before listening:\n${out}`)));
    setTimeout(() => reject(new Error(`serve.mjs did not report its URL within 10 s:\n${out}`)), 10_000).unref();
  });
}

/** Collects what should never happen on a page: console errors, page errors, failed requests
 *  and HTTP errors (the list fills as the page runs). */
export function watchProblems(page) {
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console.error: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => { if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`); });
  return problems;
}

/** Opens the demo page at `url` in a fresh page of `browser` (browsers.mjs launchBrowser()),
 *  waits for its verdict (data-status ok | error); resolves to { page, problems } (watchProblems()). */
export async function openDemoPage(browser, url, viewport = { width: 1040, height: 900 }) {
  const page = await browser.newPage(viewport);
  const problems = watchProblems(page);
  await page.goto(url, { waitUntil: 'load', timeout: 20_000 });
  await page.waitForFunction(() => ['ok', 'error'].includes(document.body.dataset.status), null, { timeout: 30_000 });
  return { page, problems };
}
