// Runs one benchmark page in a headless browser engine and hands back what the page left in
// window[resultName] once its `done` is true: the one place where bench/prefill/run.mjs,
// bench/decode/decode.mjs and bench/prefill/char_dtypes.mjs start a browser (Chromium or Firefox, tests/browser/browsers.mjs), serve the
// repository (scripts/serve.mjs, cross-origin isolated so that threads can work), forward the
// page's log lines and give up after a timeout.
import { setTimeout as sleep } from 'node:timers/promises';
import { binaryOf, installed, launchBrowser } from '../../tests/browser/browsers.mjs';
import { startServer } from '../../tests/browser/harness.mjs';

/** The engine's name as a table title: 'Chromium' or 'Firefox'. */
export const engineTitle = (engine) => ({ chromium: 'Chromium', firefox: 'Firefox' })[engine] ?? engine;

/** '<Engine> <version>' from the page's user agent ('Chrome/x' or 'Firefox/x'). */
export function engineVersion(engine, userAgent = '') {
  const m = userAgent.match(engine === 'firefox' ? /Firefox\/([\d.]+)/ : /Chrome\/([\d.]+)/);
  return `${engineTitle(engine)} ${m ? m[1] : '?'}`;
}

/**
 * Opens `path?query` in `engine` and waits for window[resultName].done. logPrefix: console lines
 * starting with it are printed (without it) as they come. chromiumArgs: extra Chromium flags.
 * Resolves to { result, problems (console errors, page errors, HTTP errors), wasmFiles (the .wasm
 * file names fetched) }; throws if the page reports { error } or after timeoutS seconds.
 */
export async function runBenchPage(engine, { script, path, query, resultName, logPrefix, timeoutS, chromiumArgs = [] }) {
  if (!installed(engine)) {
    console.error(`${script}: no ${engineTitle(engine)} at ${binaryOf(engine)} (set ${engine.toUpperCase()}=...)`);
    process.exit(1);
  }
  const server = await startServer();
  let browser = null;
  let timer = null;
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${engine} run still going after ${timeoutS} s: gave up`)), timeoutS * 1000);
    });
    const work = (async () => {
      browser = await launchBrowser(engine, { chromiumArgs, timeout: 60_000 });
      const page = await browser.newPage();
      const problems = [];
      const wasmFiles = new Set();
      page.on('console', (m) => {
        const text = m.text();
        if (text.startsWith(logPrefix)) console.log(`   ${text.slice(logPrefix.length)}`);
        else if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${text}`);
      });
      page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      page.on('response', (r) => {
        if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
        else if (r.url().endsWith('.wasm')) wasmFiles.add(new URL(r.url()).pathname.split('/').pop());
      });
      await page.goto(`${server.url}${path}?${query}`, { waitUntil: 'load', timeout: 60_000 });
      // Polled by hand: puppeteer's waitForFunction gives up ('Waiting failed') while the page's
      // thread is busy for long stretches, as a benchmark keeps it.
      while (!(await page.evaluate((name) => window[name]?.done === true, resultName))) await sleep(1000);
      const result = await page.evaluate((name) => window[name], resultName);
      if (result.error) throw new Error(`in the ${engine} page: ${result.error}\n${problems.join('\n')}`);
      return { result, problems, wasmFiles: [...wasmFiles] };
    })();
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
    await browser?.close();
    server.child.kill('SIGTERM');
  }
}
