#!/usr/bin/env node
// The committed char-level GPT (web/model/) with its attention modules' weights and caches in
// each storage dtype, against the same model in float32:
//   node bench/char_dtypes.mjs [--node] [--browser] [--tokens N] [--runs R] [--markdown]
// Per (weightsDtype, cache dtype): the greedy continuation of web/model/golden.json's prompt
// (whether it equals float32's, else the first character where it differs), the max |logit
// difference| from float32 over the prompt's positions and N − 1 steps fed float32's greedy
// tokens (teacher forcing: every dtype is compared at the same positions, even after its own
// text would have gone another way), and tokens/s of generate() (the prompt's forward counted,
// as web/model/generate.mjs reports it; best of R runs, after one untimed run). Only the
// attention modules change dtype: the embedding, LayerNorms, MLP and head stay float64 in JS
// (web/model/char_gpt.js). What is measured: bench/char_dtypes_suite.mjs.
//
//   (no flag)     run in Node
//   --browser     run in headless Chromium instead (bench/browser/char_dtypes.html; the page
//                 loads the package's 'simd' module, one thread); --node --browser: both
//   --tokens N    greedy characters (default 200: golden.json's continuation)
//   --runs R      timed generate() runs per dtype, best reported (default 5)
//   --markdown    also print the tables as Markdown
import { readFile } from 'node:fs/promises';
import { loadNodeModel } from '../web/model/load_node.js';
import { formatDtypes, measureDtypes } from './char_dtypes_suite.mjs';
import { exitWithUsage, parseFlags, runAndExit } from './run_env.mjs';

const golden = JSON.parse(await readFile(new URL('../web/model/golden.json', import.meta.url), 'utf8'));

const { values } = parseFlags(import.meta.url, process.argv.slice(2), {
  node: { type: 'boolean', default: false },
  browser: { type: 'boolean', default: false },
  tokens: { type: 'string', default: String(golden.continuationLength) },
  runs: { type: 'string', default: '5' },
  markdown: { type: 'boolean', default: false },
});
const opts = { node: values.node || !values.browser, browser: values.browser, tokens: Number(values.tokens), runs: Number(values.runs), markdown: values.markdown };
if (!Number.isInteger(opts.tokens) || opts.tokens < 1) exitWithUsage(import.meta.url, `--tokens: expected an integer >= 1, got '${values.tokens}'`);
if (!Number.isInteger(opts.runs) || opts.runs < 1) exitWithUsage(import.meta.url, `--runs: expected an integer >= 1, got '${values.runs}'`);

function print(title, rows) {
  console.log(`\n== ${title} ==\n\n${formatDtypes(rows, golden, opts.tokens)}`);
  if (opts.markdown) console.log(`\n${formatDtypes(rows, golden, opts.tokens, { markdown: true })}`);
  return rows;
}

async function runNode() {
  return print(`Node ${process.version}`, await measureDtypes(loadNodeModel, golden, opts));
}

async function runBrowser() {
  const { startServer } = await import('../tests/browser/harness.mjs');
  const { launchBrowser } = await import('../tests/browser/browsers.mjs');
  const server = await startServer();
  const browser = await launchBrowser('chromium', { timeout: 60_000 });
  try {
    const page = await browser.newPage();
    const q = new URLSearchParams({ tokens: String(opts.tokens), runs: String(opts.runs) });
    await page.goto(`${server.url}/bench/browser/char_dtypes.html?${q}`, { waitUntil: 'load', timeout: 60_000 });
    await page.waitForFunction(() => window.__charDtypes?.done, null, { timeout: 300_000, polling: 250 });
    const result = await page.evaluate(() => window.__charDtypes);
    if (result.error) throw new Error(`in the page: ${result.error}`);
    return print(`Chromium ${browser.version} headless`, result.rows);
  } finally {
    await browser.close();
    server.child.kill('SIGTERM');
  }
}

await runAndExit('char_dtypes.mjs', { ...opts, json: null }, { runNode, runBrowser });
