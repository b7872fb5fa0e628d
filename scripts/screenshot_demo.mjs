#!/usr/bin/env node
// The README's picture of the demo: docs/images/demo.png, the top of the page at 1280×800 (the first screen)
// after a Generate of 160 characters (the model's text, its speed, where it looked), in headless Chromium, with a character
// pointed at so that its window shows. Needs the WASM build (npm run build) and Chromium.
//   node scripts/screenshot_demo.mjs [out.png]
// The PNG stays under MAX_BYTES: the README ships in the npm package.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, openDemoPage, startServer } from '../tests/browser/harness.mjs';
import { launchBrowser } from '../tests/browser/browsers.mjs';

const OUT = process.argv[2] ?? join(ROOT, 'docs/images/demo.png');
const VIEWPORT = { width: 1280, height: 800 };
const MAX_BYTES = 200 * 1024;
const TOKENS = 160;

const { child: server, url } = await startServer();
const browser = await launchBrowser('chromium');
try {
  const { page, problems } = await openDemoPage(browser, `${url}/web/demo/`, VIEWPORT);
  await page.waitForFunction(() => document.body.dataset.genVocab !== undefined, null, { timeout: 20_000 });
  // Fewer rows than the default 300: taller rows make a smaller PNG (and read better at this size).
  await page.fill('#gen-controls input[name=tokens]', String(TOKENS));
  await page.click('#gen-run');
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.genStatus), null, { timeout: 30_000 });
  if (await page.evaluate(() => document.body.dataset.genStatus) !== 'done') throw new Error(await page.textContent('#gen-status'));
  await page.evaluate(() => document.querySelector('#gen-out span:nth-child(100)').dispatchEvent(new PointerEvent('pointerover', { bubbles: true })));
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: OUT });
  if (problems.length) throw new Error(`the page reported problems:\n${problems.join('\n')}`);
  const bytes = statSync(OUT).size;
  if (bytes > MAX_BYTES) throw new Error(`${OUT}: ${bytes} bytes, over ${MAX_BYTES}`);
  console.log(`screenshot_demo: wrote ${OUT} (${(bytes / 1024).toFixed(0)} KiB)`);
} finally {
  await browser.close();
  server.kill('SIGTERM');
}
