// How fast one thread streams memory while it computes (stream_work.c's loops): for R = 0
// (membw.c's sum(), 8 accumulators) to 16 operations per vector, the rate over a buffer far larger
// than the caches (streamed) and over one that stays in the L2 (the loop's own pace), in GB/s of
// the buffer read. Where the streamed rate falls below both the R = 0 bandwidth and the in-L2
// rate, the loop is short of misses in flight, not of bandwidth or arithmetic: the limit of a
// narrow decode loop that does as many vector operations per 64-byte line
// (docs/performance/decode_stack.md#decode-through-a-model-sized-stack).
//   node bench/limits/membw/stream_work.mjs [--megabytes 1024] [--passes 8] [--markdown]
import { parseArgs } from 'node:util';
import { membwWasm } from './wasm_file.mjs';
import { markdownTable } from '../../lib/table.mjs';

const { values: v } = parseArgs({ options: {
  megabytes: { type: 'string', default: '1024' }, passes: { type: 'string', default: '8' }, markdown: { type: 'boolean', default: false },
} });
const ROUNDS = [0, 1, 2, 4, 6, 8, 12, 16];
const L2_BYTES = 256 * 1024;  // in every L2 of the machines this project meets (512 KB - 2 MB)

const { instance } = await WebAssembly.instantiate(membwWasm(), {});
const { grow, memory } = instance.exports;
if (!instance.exports.float_1) throw new Error('stream_work: build/membw/membw.wasm predates stream_work.c: rebuild it (bash bench/limits/membw/build.sh)');
// stream_work.c's loop `kind` (float, int, far4) with R operations a vector; sum() for R = 0.
const loop = (kind, r) => (r === 0 ? instance.exports.sum : instance.exports[`${kind}_${r}`]);
const KINDS = [['float', 'one stream, float adds'], ['int', 'one stream, integer ops'], ['far4', '4 streams, float adds']];

const bytes = Number(v.megabytes) * 2 ** 20;
const start = grow(bytes / 65536 + 1);
if (!start) throw new Error(`stream_work: could not grow WASM memory by ${v.megabytes} MiB`);
new Float32Array(memory.buffer, start, bytes / 4).fill(1);  // every page touched before timing

// Best GB/s of `passes` runs of fn over `span` bytes from `start`, each run `repeat` times.
function bestRate(fn, span, repeat, passes) {
  let best = 0;
  for (let p = 0; p < passes; p++) {
    const t0 = performance.now();
    for (let i = 0; i < repeat; i++) fn(start, span / 4);
    best = Math.max(best, (span * repeat) / ((performance.now() - t0) * 1e6));
  }
  return best;
}

const passes = Number(v.passes);
// The loop's rates: in the L2 (its own pace) and streamed.
function rates(fn) {
  bestRate(fn, L2_BYTES, 200, 2);  // tiers the loop up
  return { inL2: bestRate(fn, L2_BYTES, Math.ceil(bytes / L2_BYTES / 8), passes), streamed: bestRate(fn, bytes, 1, passes) };
}
const rows = ROUNDS.map((r) => ({ r, ops: 8 + 4 * r, kinds: (r ? KINDS : KINDS.slice(0, 1)).map(([kind]) => rates(loop(kind, r))) }));
const bandwidth = rows[0].kinds[0].streamed;
const table = rows.map(({ r, ops, kinds }) => [String(r), String(ops),
  ...KINDS.map((_, k) => (kinds[k] ? `${kinds[k].streamed.toFixed(1)} / ${kinds[k].inL2.toFixed(1)}` : ''))]);
const head = ['operations per vector', 'vector ops per 64-byte line', ...KINDS.map(([, title]) => `${title}: GB/s streamed / in L2`)];
console.log(`Node ${process.version}, one thread, ${v.megabytes} MiB streamed, ${L2_BYTES / 1024} KiB in the L2, best of ${passes} passes`);
if (v.markdown) {
  console.log(markdownTable(head.map((h, i) => [h, (row) => row[i], 'r']), table));
} else {
  console.log(head.join(' | '));
  for (const row of table) console.log(row.join(' | '));
}
