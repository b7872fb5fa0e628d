#!/usr/bin/env node
// Browser cold start: navigation → the demo page's first result (web/demo/, or with --static the
// static deploy that scripts/build_demo.mjs writes into build/demo/: the page runs the
// package on load and sets <body data-status="ok"> when its first run is shown), in headless
// Chromium or Firefox (tests/browser/browsers.mjs, as the page tests launch them) on the
// repository's own server (scripts/serve.mjs, cross-origin isolated unless --plain). Each run opens
// the page in a fresh browser context (a first visit: nothing cached), then reloads it in that
// context (a second visit: the server sends no-cache with an ETag, so the browser revalidates each
// file and keeps what it has, with the code caches its engine builds for cached scripts and WASM
// modules). Prints the median and minimum of each.
//
//   node bench/cold_start/browser_cold_start.mjs [--runs N] [--plain] [--static] [--browser chromium|firefox] [--markdown]
//   --markdown    also print the table as Markdown (docs/performance/memory_and_startup.md#cold-start)
//
// web/demo/ is the page as written (every module of web/src a request of its own: what `npm start`
// serves first); build/demo/ is what a visitor of a static deploy loads (one bundle per page,
// node scripts/build_demo.mjs).
//
// Per visit: first result (ms from navigation start, performance.now() when data-status turned
// ok), DOMContentLoaded, when the last .wasm before it had arrived, how many requests the page
// made until then, and the page's own first-forward time (data-ms-first).
import { commonHeader, parseFlags } from '../lib/run_env.mjs';

const { values } = parseFlags(import.meta.url, process.argv.slice(2), {
  runs: { type: 'string', default: '9' },
  plain: { type: 'boolean', default: false },
  static: { type: 'boolean', default: false },
  browser: { type: 'string', default: 'chromium' },
  markdown: { type: 'boolean', default: false },
});
const runs = Number(values.runs);
if (!['chromium', 'firefox'].includes(values.browser)) throw new Error(`--browser: expected chromium or firefox, got '${values.browser}'`);
const { startServer } = await import('../../tests/browser/harness.mjs');
const { launchBrowser } = await import('../../tests/browser/browsers.mjs');

// Installed before any page script: the moment the first run's verdict lands on <body>.
function recordFirstResult() {
  new MutationObserver((_, observer) => {
    const status = document.body?.dataset.status;
    if (status === 'ok' || status === 'error') {
      window.__firstResult = { status, ms: performance.now() };
      observer.disconnect();
    }
  }).observe(document, { attributes: true, subtree: true, attributeFilter: ['data-status'] });
}

async function visit(page, go) {
  await go();
  await page.waitForFunction(() => window.__firstResult, null, { timeout: 60_000 });
  return page.evaluate(() => {
    const before = performance.getEntriesByType('resource').filter((e) => e.responseEnd <= window.__firstResult.ms);
    return {
      ...window.__firstResult,
      domContentLoaded: performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd,
      wasmFetched: Math.max(...before.filter((e) => new URL(e.name).pathname.endsWith('.wasm')).map((e) => e.responseEnd)),
      requests: before.length,
      pageFirstForward: Number(document.body.dataset.msFirst),
    };
  });
}

const server = await startServer({ isolated: !values.plain });
let browser;
try {
  browser = await launchBrowser(values.browser);
} catch (e) {
  server.child.kill();
  throw e;
}
const url = `${server.url}/${values.static ? 'build' : 'web'}/demo/`;
const results = { first: [], second: [] };
try {
  for (let i = 0; i < runs; i++) {
    const page = await browser.newPage();  // its own browser context: nothing cached
    await page.addInitScript(recordFirstResult);
    results.first.push(await visit(page, () => page.goto(url)));
    results.second.push(await visit(page, () => page.reload()));
    await page.close();
  }
} finally {
  await browser.close();
  server.child.kill();
}

const failed = [...results.first, ...results.second].filter((r) => r.status !== 'ok');
if (failed.length) throw new Error(`the page reported status '${failed[0].status}' (${failed.length} of ${2 * runs} visits)`);
const stat = (list, key) => {
  const v = list.map((r) => r[key]).sort((a, b) => a - b);
  return `${v[v.length >> 1].toFixed(0)} (min ${v[0].toFixed(0)})`;
};
for (const [k, v] of Object.entries(commonHeader('browser_cold_start.mjs', process.argv.slice(2)))) console.log(`${k}: ${v}`);
console.log(`${browser.engine}, ${url} (${values.plain ? 'not ' : ''}cross-origin isolated), ${runs} runs, median (min) ms from navigation start`);
console.log('visit                     first result    DOMContentLoaded   .wasm fetched      requests   page\'s first forward');
for (const [name, list] of [['first (nothing cached)', results.first], ['second (reload)', results.second]]) {
  console.log(`${name.padEnd(26)}${stat(list, 'ms').padEnd(16)}${stat(list, 'domContentLoaded').padEnd(19)}${stat(list, 'wasmFetched').padEnd(19)}`
    + `${String(list[0].requests).padEnd(11)}${stat(list, 'pageFirstForward')}`);
}
if (values.markdown) {
  console.log(`\n| engine | visit | first result | DOMContentLoaded | \`.wasm\` fetched | requests | page's first forward |\n|---|---|---:|---:|---:|---:|---:|`);
  for (const [name, list] of [['first', results.first], ['reload', results.second]]) {
    const cell = (k) => stat(list, k).replace(' (min ', ' (');  // median (min)
    console.log(`| ${browser.engine} | ${name} | ${cell('ms')} | ${cell('domContentLoaded')} | ${cell('wasmFetched')} | ${list[0].requests} | ${cell('pageFirstForward')} |`);
  }
}
