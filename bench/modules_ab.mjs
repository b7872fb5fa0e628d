#!/usr/bin/env node
// WASM module against WASM module in the same engine, interleaved: each contender (a module and
// a `threads` count) runs in its own Node process or Chromium page (the package's public API,
// bench/ab_contender.mjs); per shape, each round times every contender once, in an order that
// rotates from round to round, so a slow spell of the machine (other processes on it) hits them
// all alike. Prints each contender's median ms and GFLOP/s and the median over the rounds of
// (first contender's ms / its ms): above 1, faster than the first contender.
//
//   node [--experimental-wasm-relaxed-simd] bench/modules_ab.mjs [--browser] [--causal] [--quick]
//        [--rounds N] <module>[:<threads>] ...
//   e.g. node --experimental-wasm-relaxed-simd bench/modules_ab.mjs simd relaxed
//        node bench/modules_ab.mjs --browser simd relaxed
//        node bench/modules_ab.mjs --browser simd:2 mt     (pool of 2 workers vs pthreads)
//
// Node 20 runs 'relaxed' only with --experimental-wasm-relaxed-simd (passed on to the contender
// processes). Chromium pages are cross-origin isolated (scripts/serve.mjs), so every module can
// run; the threads modules use navigator.hardwareConcurrency threads.
import { fork } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { contender } from './ab_contender.mjs';
import { exitWithUsage, parseFlags } from './run_env.mjs';
import { flops, mhaShapes } from './suite.mjs';

const WARMUP_ROUNDS = 2;

function parseOptions(argv) {
  const { values: v, positionals } = parseFlags(import.meta.url, argv, {
    browser: { type: 'boolean', default: false },
    causal: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string', default: '15' },
  }, { allowPositionals: true });
  const opts = { browser: v.browser, causal: v.causal, quick: v.quick, rounds: Number(v.rounds), contenders: [] };
  for (const a of positionals) {
    if (!/^[a-z][a-z0-9-]*(:\d+)?$/.test(a)) exitWithUsage(import.meta.url, `unknown argument '${a}'`);
    const [module, threads = '1'] = a.split(':');
    opts.contenders.push({ module, threads: Number(threads), label: a });
  }
  if (opts.contenders.length < 2) exitWithUsage(import.meta.url, 'name at least two contenders, e.g. simd relaxed');
  return opts;
}

/** A Node contender process: { info, time(shape, causal, reps), close() }. */
async function nodeContender({ module, threads }) {
  const child = fork(fileURLToPath(import.meta.url), ['--child', String(threads)], {
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

/** Chromium: one page per contender; resolves to a factory like nodeContender and a close(). */
async function chromiumContenders() {
  const { startServer } = await import('../tests/browser/harness.mjs');
  const { launchBrowser } = await import('../tests/browser/browsers.mjs');
  const server = await startServer({ isolated: true });
  const browser = await launchBrowser('chromium');
  const make = async ({ module, threads }) => {
    const page = await browser.newPage();
    page.on('console', (m) => { if (m.type() === 'warning' || m.type() === 'error') console.log(`  [${module}] ${m.text()}`); });
    await page.goto(`${server.url}/bench/browser/ab.html?wasm=${module}&threads=${threads}`);
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

const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];

async function main() {
  const opts = parseOptions(process.argv.slice(2));
  const chromium = opts.browser ? await chromiumContenders() : null;
  const contenders = [];
  try {
    for (const c of opts.contenders) contenders.push(await (chromium ? chromium.make(c) : nodeContender(c)));
    const loads = [loadavg()[0]];
    console.log(`${opts.browser ? 'Chromium' : `Node ${process.version}`}, ${cpus()[0]?.model}, ${cpus().length} cores; `
      + `${opts.causal ? 'causal' : 'no mask'}, ${opts.rounds} rounds (+${WARMUP_ROUNDS} warm-up)`);
    console.log(`contenders: ${contenders.map((c, k) => `${opts.contenders[k].label} (ran ${c.info.wasmModule}, threads ${c.info.threads})`).join(', ')}`);
    const substituted = contenders.filter((c, k) => c.info.wasmModule !== opts.contenders[k].module);
    if (substituted.length) console.log('WARNING: a contender runs another module than asked (a fallback?)');
    console.log(`shape (L, E, h)   ${opts.contenders.map((c) => `${c.label}: median ms, GFLOP/s`).join(' | ')} | speed vs ${opts.contenders[0].label} (median of rounds)`);
    for (const shape of mhaShapes('modules_ab', { quick: opts.quick })) {
      const [L, E] = shape;
      const reps = L >= 1024 ? 1 : 3;
      const ms = contenders.map(() => []);
      for (let r = 0; r < WARMUP_ROUNDS + opts.rounds; r++) {
        for (let i = 0; i < contenders.length; i++) {
          const k = (i + r) % contenders.length;
          const t = median(await contenders[k].time(shape, opts.causal, reps));
          if (r >= WARMUP_ROUNDS) ms[k].push(t);
        }
      }
      const cells = ms.map((t) => `${median(t).toFixed(2)} ms ${(flops(L, E) / median(t) / 1e6).toFixed(1)}`);
      const speed = ms.slice(1).map((t) => median(t.map((x, r) => ms[0][r] / x)).toFixed(2));
      console.log(`(${shape.join(', ')})`.padEnd(18), cells.join(' | '), '|', speed.join(' '));
    }
    loads.push(loadavg()[0]);
    console.log(`load average (1 min) at start / end: ${loads.map((l) => l.toFixed(1)).join(' / ')}`);
  } finally {
    for (const c of contenders) await c.close();
    await chromium?.close();
  }
}

if (process.argv[2] === '--child') {
  // A Node contender: WEBATTENTION_WASM (set by the parent) picks the module.
  const api = await import('../web/src/node.js');
  const c = await contender(api, Number(process.argv[3]));
  process.on('message', async ({ shape, causal, reps }) => process.send({ ms: await c.time(shape, causal, reps) }));
  process.on('disconnect', () => process.exit(0));
  process.send({ info: c.info });
} else {
  await main();
}
