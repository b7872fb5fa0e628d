#!/usr/bin/env node
// The evidence behind the package test's Firefox retry (tests/package/browser_page.mjs,
// FIREFOX_WORKER_RETRIES): a cross-origin-isolated page whose module worker starts two workers of
// its own, opened N times in headless Firefox, once under WebDriver BiDi (puppeteer-core, as the
// tests drive it) and once without automation (a plain `firefox --headless` whose page reports by
// fetch()). No webattention code is involved. Prints how many pages never reported in each.
//
//   node scripts/firefox_nested_workers.mjs [N=150]
//
// Firefox ESR 153 here: 4-7 of 150 hung under BiDi, 0 of 210 without it. When both say 0, the
// retry can go.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIREFOX, launchBrowser } from '../tests/browser/browsers.mjs';
import { CROSS_ORIGIN_ISOLATED } from '../tests/package/static_server.mjs';

const N = Number(process.argv[2] ?? 150);
const FILES = {
  '/': ['text/html', `<!doctype html><script type="module">
const w = new Worker('/outer.js', { type: 'module' });
w.onmessage = (e) => { window.__done = e.data === 'done'; fetch('/report'); };
w.postMessage('go');
</script>`],
  '/outer.js': ['text/javascript', `self.onmessage = async () => {
  const inner = URL.createObjectURL(new Blob(['onmessage = () => postMessage(1);'], { type: 'text/javascript' }));
  const workers = [new Worker(inner), new Worker(inner)];
  await Promise.all(workers.map((w) => new Promise((r) => { w.onmessage = r; w.postMessage(0); })));
  postMessage('done');
};`],
};

let reports = 0;
const server = createServer((req, res) => {
  if (req.url === '/report') reports += 1;
  const [type, body] = FILES[req.url] ?? ['text/plain', ''];
  res.writeHead(FILES[req.url] ? 200 : 204, { ...CROSS_ORIGIN_ISOLATED, 'content-type': type }).end(body);
}).listen(0, '127.0.0.1');
await new Promise((r) => server.on('listening', r));
const url = `http://127.0.0.1:${server.address().port}/`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function underBidi() {
  const browser = await launchBrowser('firefox');
  let hung = 0;
  for (let i = 0; i < N; i += 1) {
    const page = await browser.newPage();
    await page.goto(url);
    await page.waitForFunction(() => window.__done === true, null, { timeout: 15_000 }).catch(() => { hung += 1; });
    await page.close().catch(() => {});
  }
  await browser.close();
  return hung;
}

async function withoutAutomation() {
  const profile = mkdtempSync(join(tmpdir(), 'wa-firefox-'));
  let hung = 0;
  for (let i = 0; i < N; i += 1) {
    const before = reports;
    const firefox = spawn(FIREFOX, ['--headless', '--no-remote', '--profile', profile, url], { stdio: 'ignore' });
    const start = Date.now();
    while (reports === before && Date.now() - start < 20_000) await sleep(50);
    if (reports === before) hung += 1;
    firefox.kill('SIGKILL');
    await sleep(300);
  }
  rmSync(profile, { recursive: true, force: true });
  return hung;
}

console.log(`under WebDriver BiDi: ${await underBidi()} of ${N} pages hung`);
console.log(`without automation:   ${await withoutAutomation()} of ${N} pages hung`);
server.close();
