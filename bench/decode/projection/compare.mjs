#!/usr/bin/env node
// Times projection.cpp's builds (run.sh makes them) side by side: per shape and weights type,
// every build's run() in turn, 9 rounds of about 50 ms each, best round per build, in Node (this
// process) or in headless Chromium or Firefox. Builds alternate round by round, so a machine that
// drifts moves them alike.
//   node bench/decode/projection/compare.mjs [--engine node|chromium|firefox] [--types f32,f16,int8,int4,int8a8,int4a8]
//        [--copies N] [--rows N] build/decode_projection/NAME ...
// --copies N: N copies of each layer's weights, stepped through in turn (24: a model's, streamed
// from memory; 1, the default: one layer's, in the L3 at (2048, 32, 8) for every type but f32).
// --rows N: input rows per call (1, the default: a decode step; e.g. 512: a prefill's projections).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { launchBrowser } from '../../../tests/browser/browsers.mjs';
import { startServer } from '../../../tests/browser/harness.mjs';
import { exitWithUsage, parseFlags, ROOT } from '../../lib/run_env.mjs';
import { markdownTable } from '../../lib/table.mjs';

const { values: v, positionals: builds } = parseFlags(import.meta.url, process.argv.slice(2), {
  engine: { type: 'string', default: 'node' },
  types: { type: 'string', default: 'f32,f16,int8' },
  copies: { type: 'string', default: '1' },
  rows: { type: 'string', default: '1' },
}, { allowPositionals: true });
if (!builds.length) exitWithUsage(import.meta.url, 'name at least one build');

// projection.cpp's setup() codes per --types name: a StorageType, + 16 for activations 'int8'.
const CODES = { f32: 0, f16: 1, bf16: 2, int8: 3, int4: 4, int8a8: 16 + 3, int4a8: 16 + 4 };

/**
 * In the engine: per shape and type ({ name: setup() code }), each build's best ms per step (its
 * rounds interleaved).
 */
async function measure(modules, types, copies, inputRows) {
  const SHAPES = [[768, 12, 12], [2048, 32, 8]];
  const rows = [];
  for (const shape of SHAPES) {
    for (const [type, code] of Object.entries(types)) {
      for (const m of modules) m._setup(...shape, code, copies, inputRows);
      const macs = modules.map((m) => m._multiply_adds());  // each build's own count (a build may set up more layers)
      const time = (m, steps) => { const t0 = performance.now(); m._run(steps); return performance.now() - t0; };
      let steps = 1;
      while (time(modules[0], steps) < 50) steps *= 2;
      const best = modules.map(() => Infinity);
      for (let round = 0; round < 9; round++) modules.forEach((m, i) => { best[i] = Math.min(best[i], time(m, steps) / steps); });
      rows.push({ shape: [...shape], type, macs, ms: best });  // a copy: WebDriver BiDi sends a repeated object as a reference
    }
  }
  return rows;
}

const positive = (flag) => {
  const n = Number(v[flag]);
  if (!Number.isInteger(n) || n < 1) exitWithUsage(import.meta.url, `--${flag}: expected an integer >= 1, got '${v[flag]}'`);
  return n;
};
const COPIES = positive('copies'), ROWS = positive('rows');
const TYPE_NAMES = v.types.split(',').map((t) => t.trim()).filter(Boolean);
for (const t of TYPE_NAMES) if (!(t in CODES)) exitWithUsage(import.meta.url, `--types: unknown '${t}' (expected some of ${Object.keys(CODES).join(', ')})`);
const TYPES = Object.fromEntries(TYPE_NAMES.map((t) => [t, CODES[t]]));

async function inNode() {
  const require = createRequire(import.meta.url);
  const modules = [];
  for (const b of builds) modules.push(await require(`${ROOT}/${b}.cjs`)({ wasmBinary: readFileSync(`${ROOT}/${b}.wasm`) }));
  return measure(modules, TYPES, COPIES, ROWS);
}

async function inBrowser(engine) {
  const server = await startServer();
  const browser = await launchBrowser(engine);
  try {
    const page = await browser.newPage();
    await page.goto(`${server.url}/bench/decode/projection/page.html`);
    return await page.evaluate(async ([names, source, types, copies, inputRows]) => {
      const modules = [];
      for (const name of names) {
        const glue = await (await fetch(`/${name}.cjs`)).text();
        const wasmBinary = await (await fetch(`/${name}.wasm`)).arrayBuffer();
        // Emscripten's MODULARIZE glue as a classic script: it defines `Module`, a factory.
        const factory = new Function(`${glue}; return Module;`)();
        modules.push(await factory({ wasmBinary }));
      }
      return (0, eval)(`(${source})`)(modules, types, copies, inputRows);
    }, [builds, measure.toString(), TYPES, COPIES, ROWS]);
  } finally {
    await browser.close();
    server.child.kill();
  }
}

const load = loadavg()[0];
const rows = v.engine === 'node' ? await inNode() : await inBrowser(v.engine);
console.log(`${v.engine}, one thread, ${COPIES} cop${COPIES === 1 ? 'y' : 'ies'} of each layer, ${ROWS} input row${ROWS === 1 ? '' : 's'}; GFLOP/s (2 per multiply-add) of the best round; load average ${load.toFixed(1)} → ${loadavg()[0].toFixed(1)}`);
const gflops = (r, i) => (2 * r.macs[i] / r.ms[i] / 1e6).toFixed(1);
console.log(markdownTable([
  ['(E, h, hkv)', (r) => `(${r.shape.join(', ')})`, 'l'],
  ['weights', (r) => r.type, 'l'],
  ...builds.map((b, i) => [b.split('/').pop(), (r) => gflops(r, i), 'r']),
  ...(builds.length > 1 ? [['last ÷ first (rate)', (r) => ((r.ms[0] / r.macs[0]) / (r.ms.at(-1) / r.macs.at(-1))).toFixed(2), 'r']] : []),
], rows));
