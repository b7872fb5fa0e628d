// Cold start (fresh process: import → first result, 128×512, h = 8) and small-input latency
// (L = 16, E = 64, h = 4: per-call overhead). Usage: node bench/latency.mjs
import { spawnSync } from 'node:child_process';
import { parseFlags } from './run_env.mjs';
import { mhaShapes } from './suite.mjs';

parseFlags(import.meta.url, process.argv.slice(2), {});  // no flags but --help
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
const { MultiHeadAttention } = await import(${JSON.stringify(new URL('../web/src/node.js', import.meta.url).href)});
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

const runs = 9;
const cold = [];
for (let i = 0; i < runs; i++) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', coldScript], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  cold.push(JSON.parse(r.stdout.trim()));
}
const median = (kind, key) => cold.map((c) => c[kind][key]).sort((a, b) => a - b)[runs >> 1];
const totals = cold.map((c) => c.wall.total).sort((a, b) => a - b);
console.log(`cold start, import → first result (${coldL}, ${coldE}, ${coldH}): median ${median('wall', 'total').toFixed(1)} ms (min ${totals[0].toFixed(1)}, max ${totals[runs - 1].toFixed(1)}); ` +
  `phase medians: ${PHASES.map((k) => `${k} ${median('wall', k).toFixed(1)}`).join(', ')} ms`);
if (!Number.isNaN(median('cpu', 'total'))) {
  console.log(`  main thread's CPU time: median ${median('cpu', 'total').toFixed(1)} ms; phase medians: ${PHASES.map((k) => `${k} ${median('cpu', k).toFixed(1)}`).join(', ')} ms`);
}

const { MultiHeadAttention } = await import('../web/src/node.js');
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
