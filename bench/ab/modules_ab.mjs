#!/usr/bin/env node
// WASM module against WASM module in the same engine, interleaved: each contender (a module and
// a `threads` count) runs in its own Node process or Chromium page (the package's public API,
// bench/ab/ab_contender.mjs); per shape, each round times every contender once, in an order that
// rotates from round to round (bench/ab/interleave.mjs), so a slow spell of the machine (other
// processes on it) hits them all alike. Prints each contender's median ms and GFLOP/s and the
// median over the rounds of (first contender's ms / its ms): above 1, faster than the first
// contender.
//
//   node [--experimental-wasm-relaxed-simd] bench/ab/modules_ab.mjs [--browser | --firefox] [--causal] [--quick]
//        [--rounds N] [--markdown] [--firefox-pref NAME=VALUE ...] [--weights DTYPE] [--activations int8] [--rows L]
//        <module>[:<threads>][@<package root>] ...
//   --markdown  also print the results as a Markdown table (docs/performance/platform.md#wasm-modules)
//   --weights, --activations  create()'s weightsDtype and activations for every contender
//   --rows L    every shape with L rows (--rows 1: a decode step's projections, one key)
//   e.g. node --experimental-wasm-relaxed-simd bench/ab/modules_ab.mjs simd relaxed
//        node bench/ab/modules_ab.mjs --browser simd relaxed
//        node bench/ab/modules_ab.mjs --browser simd:2 mt     (pool of 2 workers vs pthreads)
//        node bench/ab/modules_ab.mjs --firefox simd relaxed  (Firefox ESR, tests/browser/browsers.mjs)
//        node --experimental-wasm-relaxed-simd bench/ab/modules_ab.mjs --weights int4 --activations int8 --rows 1 simd relaxed
//        node bench/ab/modules_ab.mjs --firefox relaxed@build/before relaxed   (a change's before and
//            after: @ names another package root inside the repository, e.g. a copy of web/ and
//            package.json taken before rebuilding; the default is the repository itself)
//
// Node 20 runs 'relaxed' only with --experimental-wasm-relaxed-simd (passed on to the contender
// processes). Browser pages (Chromium or Firefox) are cross-origin isolated (scripts/serve.mjs), so every module can
// run; the threads modules use navigator.hardwareConcurrency threads.
import { fork } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { contender } from './ab_contender.mjs';
import { interleavedRounds, median, roundRatio } from './interleave.mjs';
import { exitWithUsage, parseFlags } from '../lib/run_env.mjs';
import { flops, mhaShapes } from '../lib/suite.mjs';

const WARMUP_ROUNDS = 2;

function parseOptions(argv) {
  const { values: v, positionals } = parseFlags(import.meta.url, argv, {
    browser: { type: 'boolean', default: false },
    firefox: { type: 'boolean', default: false },
    'firefox-pref': { type: 'string', multiple: true, default: [] },
    causal: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '15' },
    markdown: { type: 'boolean', default: false },
    weights: { type: 'string' },
    activations: { type: 'string' },
    rows: { type: 'string' },
  }, { allowPositionals: true });
  if (v.browser && v.firefox) exitWithUsage(import.meta.url, 'name one engine: --browser (Chromium) or --firefox');
  const engine = v.browser ? 'chromium' : v.firefox ? 'firefox' : null;
  const firefoxPrefs = {};
  for (const pref of v['firefox-pref']) {
    const m = pref.match(/^([\w.-]+)=(.*)$/);
    if (!m || !v.firefox) exitWithUsage(import.meta.url, `--firefox-pref: expected NAME=VALUE with --firefox, got '${pref}'`);
    firefoxPrefs[m[1]] = m[2] === 'true' ? true : m[2] === 'false' ? false : /^-?\d+$/.test(m[2]) ? Number(m[2]) : m[2];
  }
  const create = { ...(v.weights && { weightsDtype: v.weights }), ...(v.activations && { activations: v.activations }) };
  const rows = v.rows === undefined ? null : Number(v.rows);
  if (rows !== null && !(Number.isInteger(rows) && rows > 0)) exitWithUsage(import.meta.url, `--rows: expected a positive integer, got '${v.rows}'`);
  const opts = { engine, firefoxPrefs, causal: v.causal, quick: v.quick, rounds: Number(v.rounds), markdown: v.markdown, create, rows, contenders: [] };
  for (const a of positionals) {
    const m = a.match(/^([a-z][a-z0-9-]*)(?::(\d+))?(?:@([\w./-]+))?$/);
    if (!m || m[3]?.split('/').includes('..')) exitWithUsage(import.meta.url, `unknown argument '${a}'`);
    const [, module, threads = '1', root = '.'] = m;
    opts.contenders.push({ module, threads: Number(threads), root, label: a });
  }
  if (opts.contenders.length < 2) exitWithUsage(import.meta.url, 'name at least two contenders, e.g. simd relaxed');
  return opts;
}

/** A Node contender process: { info, time(shape, causal, reps), close() }. */
async function nodeContender({ module, threads, root }, create) {
  const child = fork(fileURLToPath(import.meta.url), ['--child', String(threads), root, JSON.stringify(create)], {
    env: { ...process.env, WEBATTENTION_WASM: module }, execArgv: process.execArgv,
  });
  let pending = null;  // the one message awaited: requests go one at a time
  child.on('message', (message) => pending?.resolve(message));
  child.on('exit', (code) => pending?.reject(new Error(`contender ${module} exited (${code})`)));
  const next = () => new Promise((resolve, reject) => { pending = { resolve, reject }; });
  const { info } = await next();
  return {
    info,
    time: async (shape, causal, reps) => { child.send({ shape, causal, reps }); return (await next()).ms; },
    close: () => child.disconnect(),
  };
}

/** A browser engine: one page per contender; resolves to a factory like nodeContender and a close(). */
async function browserContenders(engine, firefoxPrefs, create) {
  const { startServer } = await import('../../tests/browser/harness.mjs');
  const { launchBrowser } = await import('../../tests/browser/browsers.mjs');
  const server = await startServer({ isolated: true });
  const browser = await launchBrowser(engine, { firefoxPrefs });
  const make = async ({ module, threads, root }) => {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'warning' || m.type() === 'error') console.log(`  [${module}] ${m.text()}`); });
    await page.goto(`${server.url}/bench/browser/ab.html?wasm=${module}&threads=${threads}&root=${encodeURIComponent(root)}&create=${encodeURIComponent(JSON.stringify(create))}`);
    await page.waitForFunction(() => window.__ab !== undefined, null, { timeout: 60_000 });
    const error = await page.evaluate(() => window.__ab.error);
    if (error) throw new Error(`contender ${module}: ${error}`);
    return {
      info: await page.evaluate(() => window.__ab.info),
      time: async (shape, causal, reps) => {
        await page.bringToFront();
        return page.evaluate(([s, c, r]) => window.__ab.time(s, c, r), [shape, causal, reps]);
      },
      close: () => page.close(),
    };
  };
  return { make, close: async () => { await browser.close(); server.child.kill(); } };
}

async function main() {
  const opts = parseOptions(process.argv.slice(2));
  const inBrowser = opts.engine ? await browserContenders(opts.engine, opts.firefoxPrefs, opts.create) : null;
  const contenders = [];
  try {
    for (const c of opts.contenders) contenders.push(await (inBrowser ? inBrowser.make(c) : nodeContender(c, opts.create)));
    const loads = [loadavg()[0]];
    console.log(`${opts.engine ?? `Node ${process.version}`}, ${cpus()[0]?.model}, ${cpus().length} cores; `
      + `${Object.keys(opts.firefoxPrefs).length ? `prefs ${JSON.stringify(opts.firefoxPrefs)}; ` : ''}${opts.causal ? 'causal' : 'no mask'}, ${opts.rounds} rounds (+${WARMUP_ROUNDS} warm-up)`
      + `${Object.keys(opts.create).length ? `; create() ${JSON.stringify(opts.create)}` : ''}`);
    console.log(`contenders: ${contenders.map((c, k) => `${opts.contenders[k].label} (ran ${c.info.wasmModule}, threads ${c.info.threads})`).join(', ')}`);
    const substituted = contenders.filter((c, k) => c.info.wasmModule !== opts.contenders[k].module);
    if (substituted.length) console.log('WARNING: a contender runs another module than asked (a fallback?)');
    console.log(`shape (L, E, h)   ${opts.contenders.map((c) => `${c.label}: median ms, GFLOP/s`).join(' | ')} | speed vs ${opts.contenders[0].label} (median of rounds)`);
    const rows = [];
    const shapes = mhaShapes('modules_ab', { quick: opts.quick }).map(([L, E, h]) => [opts.rows ?? L, E, h]);
    for (const shape of shapes.filter((s, i) => shapes.findIndex((t) => t.join() === s.join()) === i)) {
      const [L, E] = shape;
      const reps = L >= 1024 ? 1 : 3;
      const runs = contenders.map((c) => async () => median(await c.time(shape, opts.causal, reps)));
      const ms = await interleavedRounds(runs, opts.rounds, WARMUP_ROUNDS);
      const cells = ms.map((t) => `${median(t).toFixed(2)} ms ${(flops(L, E) / median(t) / 1e6).toFixed(1)}`);
      const speed = ms.slice(1).map((t) => roundRatio(ms[0], t).toFixed(2));
      console.log(`(${shape.join(', ')})`.padEnd(18), cells.join(' | '), '|', speed.join(' '));
      rows.push({ shape, cells, speed });
    }
    if (opts.markdown) {
      const others = opts.contenders.slice(1).map((c) => c.label);
      console.log(`\n| shape (L, E, h) | ${opts.contenders.map((c) => `${c.label}: ms, GFLOP/s`).join(' | ')} | ${others.map((l) => `${l} vs ${opts.contenders[0].label}`).join(' | ')} |`);
      console.log(`|---|${opts.contenders.map(() => '---:').join('|')}|${others.map(() => '---:').join('|')}|`);
      for (const r of rows) console.log(`| (${r.shape.join(', ')}) | ${r.cells.join(' | ')} | ${r.speed.join(' | ')} |`);
    }
    loads.push(loadavg()[0]);
    console.log(`load average (1 min) at start / end: ${loads.map((l) => l.toFixed(1)).join(' / ')}`);
  } finally {
    for (const c of contenders) await c.close();
    await inBrowser?.close();
  }
}

if (process.argv[2] === '--child') {
  // A Node contender: WEBATTENTION_WASM (set by the parent) picks the module.
  const api = await import(new URL(`../../${process.argv[4]}/web/src/node.js`, import.meta.url));
  const c = await contender(api, Number(process.argv[3]), JSON.parse(process.argv[5] ?? '{}'));
  process.on('message', async ({ shape, causal, reps }) => process.send({ ms: await c.time(shape, causal, reps) }));
  process.on('disconnect', () => process.exit(0));
  process.send({ info: c.info });
} else {
  await main();
}
