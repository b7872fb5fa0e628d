// Cold start (fresh process: import → first result, 128×512, h = 8) and small-input latency
// (L = 16, E = 64, h = 4: per-call overhead).
// Usage: node bench/cold_start/latency.mjs [--entry FILE]... [--runs N]
//   --entry FILE  the Node entry to import (default: the package's "node" export, web/dist/node.js,
//                 what a user's import loads; web/src/node.js is the unbundled source). Given more
//                 than once, the cold starts alternate between them run by run (an A/B on a busy
//                 machine) and the ratio of each one's medians to the first's is printed, and the
//                 median over runs of its total over the first entry's total in the same run.
//   --runs N      cold starts per entry (default 9)
//   --cold-only   skip the small-input latency
//   --markdown    also print the results as Markdown tables (docs/performance/memory_and_startup.md#cold-start)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseFlags } from '../lib/run_env.mjs';
import { mhaShapes } from '../lib/suite.mjs';
import { markdownTable } from '../lib/table.mjs';

const { values } = parseFlags(import.meta.url, process.argv.slice(2), {
  entry: { type: 'string', multiple: true }, runs: { type: 'string', default: '9' }, 'cold-only': { type: 'boolean' },
  markdown: { type: 'boolean' },
});
const packageEntry = () => {
  const { exports } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return new URL(`.${exports['.'].node.slice(1)}`, new URL('../../', import.meta.url)).href;
};
const entries = values.entry?.map((f) => pathToFileURL(f).href) ?? [packageEntry()];
const runs = Number(values.runs);
// The two shapes, from the one case list (tests/cases/kernel_cases.json, perf mode).
const [[coldL, coldE, coldH]] = mhaShapes('latency_cold');
const [[L, E, h]] = mhaShapes('latency_small');

// Each phase is timed too (import, create, loadStateDict, first forward), to show where it goes:
// wall time, and on Linux the main thread's own CPU time (its schedstat run time, which other
// processes on a busy machine do not inflate: the figure to compare changes by there).
const PHASES = ['import', 'create', 'loadStateDict', 'forward'];
const coldScript = `
import { readFileSync } from 'node:fs';
const cpu = () => { try { return Number(readFileSync('/proc/self/task/' + process.pid + '/schedstat', 'utf8').split(' ')[0]) / 1e6; } catch { return NaN; } };
const t = [performance.now()], c = [cpu()];
const mark = () => { t.push(performance.now()); c.push(cpu()); };
const { MultiHeadAttention } = await import(process.argv[1]);
mark();
const mha = await MultiHeadAttention.create({ embedDim: ${coldE}, numHeads: ${coldH} });
mark();
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01)])));
mark();
const x = { data: new Float32Array(${coldL * coldE}).fill(0.5), shape: [1, ${coldL}, ${coldE}] };
await mha.forward(x, x, x);
mark();
const phases = (v) => Object.fromEntries([['total', v[4] - v[0]], ...${JSON.stringify(PHASES)}.map((k, i) => [k, v[i + 1] - v[i]])]);
console.log(JSON.stringify({ wall: phases(t), cpu: phases(c) }));`;

const cold = entries.map(() => []);
for (let i = 0; i < runs; i++) {
  entries.forEach((entry, e) => {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', coldScript, entry], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    cold[e].push(JSON.parse(r.stdout.trim()));
  });
}
const median = (e, kind, key) => cold[e].map((c) => c[kind][key]).sort((a, b) => a - b)[runs >> 1];
const KEYS = ['total', ...PHASES];
// Also the median over runs of (this entry's total / the first's in the same run): the entries
// of a run start within a fraction of a second of each other, so a machine whose speed drifts
// over the batch moves both sides of each run's ratio alike.
const pairedRatio = (e, kind) => {
  const r = cold[e].map((c, i) => c[kind].total / cold[0][i][kind].total).sort((a, b) => a - b);
  return r[runs >> 1];
};
const ratios = (e, kind) => (e === 0 ? '' : ` (ratio to the first entry: ${KEYS.map((k) => `${k} ${(median(e, kind, k) / median(0, kind, k)).toFixed(2)}`).join(', ')}; `
  + `total per run, median ${pairedRatio(e, kind).toFixed(3)})`);
entries.forEach((entry, e) => {
  const totals = cold[e].map((c) => c.wall.total).sort((a, b) => a - b);
  console.log(`cold start, import → first result (${coldL}, ${coldE}, ${coldH}), ${entry}: median ${median(e, 'wall', 'total').toFixed(1)} ms (min ${totals[0].toFixed(1)}, max ${totals[runs - 1].toFixed(1)}); ` +
    `phase medians: ${PHASES.map((k) => `${k} ${median(e, 'wall', k).toFixed(1)}`).join(', ')} ms${ratios(e, 'wall')}`);
  if (!Number.isNaN(median(e, 'cpu', 'total'))) {
    console.log(`  main thread's CPU time: median ${median(e, 'cpu', 'total').toFixed(1)} ms; phase medians: ${PHASES.map((k) => `${k} ${median(e, 'cpu', k).toFixed(1)}`).join(', ')} ms${ratios(e, 'cpu')}`);
  }
});
if (values.markdown) {
  // One row per entry and clock (wall; main-thread CPU where Linux gives it), medians in ms.
  const rows = entries.flatMap((entry, e) => ['wall', 'cpu'].filter((kind) => !Number.isNaN(median(e, kind, 'total')))
    .map((kind) => ({ entry, e, kind })));
  const ms = (k) => (r) => median(r.e, r.kind, k).toFixed(1);
  console.log(`\n${markdownTable([
    ['entry', (r) => (entries.length > 1 ? `${r.e + 1}: ${r.entry.split('/').slice(-3).join('/')}` : r.entry.split('/').slice(-3).join('/')), 'l'],
    ['clock', (r) => (r.kind === 'wall' ? 'wall' : 'main-thread CPU'), 'l'],
    ...PHASES.map((k) => [k === 'forward' ? 'first forward' : k, ms(k), 'r']),
    ['total', ms('total'), 'r'],
    ...(entries.length > 1 ? [['total ÷ first entry (per run)', (r) => pairedRatio(r.e, r.kind).toFixed(3), 'r']] : []),
  ], rows)}\n\n(${coldL}, ${coldE}, ${coldH}), median of ${runs} fresh processes per entry, ms`);
}

if (values['cold-only']) process.exit(0);
const { MultiHeadAttention } = await import(entries[0]);
const mha = await MultiHeadAttention.create({ embedDim: E, numHeads: h });
mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.01)])));
const x = { data: new Float32Array(L * E).fill(0.5), shape: [1, L, E] };
for (let i = 0; i < 2000; i++) await mha.forward(x, x, x);  // warm up (V8 tiers up to TurboFan)
const batches = [];
for (let b = 0; b < 15; b++) {
  const n = 2000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await mha.forward(x, x, x);
  batches.push(((performance.now() - t0) / n) * 1000);
}
batches.sort((a, b) => a - b);
console.log(`small input (${L}, ${E}, ${h}): median ${batches[7].toFixed(1)} µs per forward (min ${batches[0].toFixed(1)})`);
if (values.markdown) {
  console.log(`\n| (L, E, h) | µs per forward, median | min |\n|---|---:|---:|\n| (${L}, ${E}, ${h}) | ${batches[7].toFixed(1)} | ${batches[0].toFixed(1)} |`);
}
