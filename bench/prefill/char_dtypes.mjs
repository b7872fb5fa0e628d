#!/usr/bin/env node
// The committed char-level GPT (web/model/) with its attention modules' weights and caches in
// each storage dtype, against the same model in float32:
//   node bench/prefill/char_dtypes.mjs [--node] [--browser] [--firefox] [--tokens N] [--runs R] [--markdown] [--timeout S]
// Per (weightsDtype, cache dtype, activations: int8 with int8 and int4 weights too): the greedy continuation of web/model/golden.json's prompt
// (whether it equals float32's, else the first character where it differs), the max |logit
// difference| from float32 over the prompt's positions and N − 1 steps fed float32's greedy
// tokens (teacher forcing: every dtype is compared at the same positions, even after its own
// text would have gone another way), and tokens/s of generate() (the prompt's forward counted,
// as web/model/generate.mjs reports it; best of R runs, after one untimed run). Only the
// attention modules change dtype: the embedding, LayerNorms, MLP and head stay float64 in JS
// (web/model/char_gpt.js). What is measured: bench/prefill/char_dtypes_suite.mjs.
//
//   (no flag)     run in Node
//   --browser     run in headless Chromium instead (bench/browser/suite.html?suite=char_dtypes; the page
//                 loads the package's 'simd' module, one thread)
//   --firefox     run in headless Firefox (firefox-esr, tests/browser/browsers.mjs; FIREFOX=)
//   --node --browser --firefox  any of them, one after the other (one table each)
//   --tokens N    greedy characters (default 200: golden.json's continuation)
//   --runs R      timed generate() runs per dtype, best reported (default 5)
//   --markdown    also print the tables as Markdown
//   --timeout S   give up on a browser run after S seconds (default 600)
import { readFile } from 'node:fs/promises';
import { loadNodeModel } from '../../web/model/load_node.js';
import { formatDtypes, measureDtypes } from './char_dtypes_suite.mjs';
import { exitWithUsage, parseFlags, runAndExit } from '../lib/run_env.mjs';
import { engineVersion, runBenchPage } from '../lib/browser_page.mjs';

const golden = JSON.parse(await readFile(new URL('../../web/model/golden.json', import.meta.url), 'utf8'));

const { values } = parseFlags(import.meta.url, process.argv.slice(2), {
  node: { type: 'boolean', default: false },
  browser: { type: 'boolean', default: false },
  firefox: { type: 'boolean', default: false },
  tokens: { type: 'string', default: String(golden.continuationLength) },
  runs: { type: 'string', default: '5' },
  markdown: { type: 'boolean', default: false },
  timeout: { type: 'string', default: '600' },
});
const opts = {
  node: values.node || !(values.browser || values.firefox), browser: values.browser, firefox: values.firefox,
  tokens: Number(values.tokens), runs: Number(values.runs), markdown: values.markdown, timeoutS: Number(values.timeout),
};
if (!Number.isInteger(opts.tokens) || opts.tokens < 1) exitWithUsage(import.meta.url, `--tokens: expected an integer >= 1, got '${values.tokens}'`);
if (!Number.isInteger(opts.runs) || opts.runs < 1) exitWithUsage(import.meta.url, `--runs: expected an integer >= 1, got '${values.runs}'`);
if (!(opts.timeoutS > 0)) exitWithUsage(import.meta.url, `--timeout: expected a positive number of seconds, got '${values.timeout}'`);

function print(title, rows) {
  console.log(`\n== ${title} ==\n\n${formatDtypes(rows, golden, opts.tokens)}`);
  if (opts.markdown) console.log(`\n${formatDtypes(rows, golden, opts.tokens, { markdown: true })}`);
  return rows;
}

async function runNode() {
  return print(`Node ${process.version}`, await measureDtypes(loadNodeModel, golden, opts));
}

async function runBrowser(_opts, _common, engine) {
  const { result } = await runBenchPage(engine, {
    script: 'char_dtypes.mjs', path: '/bench/browser/suite.html', query: new URLSearchParams({ suite: 'char_dtypes', tokens: String(opts.tokens), runs: String(opts.runs) }),
    resultName: '__charDtypes', logPrefix: '[char_dtypes] ', timeoutS: opts.timeoutS,
  });
  return print(`${engineVersion(engine, result.env.userAgent)} headless`, result.rows);
}

await runAndExit('char_dtypes.mjs', { ...opts, json: null }, { runNode, runBrowser });
