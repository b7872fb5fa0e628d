// The decode benchmark itself, shared by Node (bench/decode.mjs) and Chromium
// (bench/browser/decode.html): the libraries and the measured bandwidth come in as arguments.
// See bench/README.md, "Incremental decoding".
//
// One decode step = one forward of a single new token (L = 1) through the attention module
// (Q/K/V projections, attention over every cached position, output projection), batch 1, one
// thread, from a JS Float32Array to a JS Float32Array. Per (E, h, hkv) and cache length n:
//   (a) webattention, KV cache   forward(x_p, x_p, x_p, { cache }): the cache holds n positions
//   (b) webattention, no cache   forward(x_p [1, 1, E], x_0..p [1, p + 1, E], same): what a loop
//       without a cache must do: re-project K/V of all p + 1 positions and attend with the one new
//       query (no mask: the last position sees every key). Not a causal forward over all p + 1
//       rows, which would also recompute the p earlier queries' outputs that decoding throws away.
//   (c) onnxruntime-web, wasm EP, com.microsoft.GroupQueryAttention with past/present K/V
//       (onnx_decode_model.mjs): each step feeds the previous step's present_key/present_value
//       as past, so ORT's copies (past in, past + new into present, present out) are timed, as a
//       real ORT decode loop pays them.
//   (d) the memory bound: the bytes a step must read (the four projections' f32 weights and
//       biases, the n cached positions' K and V in f32) / the measured read bandwidth.
// Every cell's first step (at length n) is compared with (a)'s output before timing. The steps
// of a cell at length n run at lengths n … n + drift(n) − 1 (each appends one position), after
// which the cell rewinds to n untimed ((a): reset() and prefill n; (b) and (c): back to the
// saved state), so the timed lengths stay within n/16 of n. Cells are timed interleaved, one
// step each per round (a slow spell of the machine hits all three alike): median and best.
// Prefill: 512 tokens into an empty cache against forward(x, x, x, { isCausal: true }).
import { measureReadBandwidth } from './membw/measure.mjs';
import { buildGqaStepModel, buildKvProjectionModel } from './onnx_decode_model.mjs';
import { perfCases } from '../tests/cases/cases.mjs';
import { DIFF_LIMIT, filled, maxAbsDiff, median } from './suite.mjs';
import { markdownTable, plainTable } from './table.mjs';

// The timed configurations and cache lengths: the decode perf cases of the one case list
// (tests/cases/kernel_cases.json). The tables put every configuration at the same lengths and
// one head width (dk = dv), so the list must give them alike.
const DECODE_CASES = perfCases('decode', 'decode');
const alike = (what, f) => {
  const values = [...new Set(DECODE_CASES.map((c) => JSON.stringify(f(c))))];
  if (values.length !== 1) throw new Error(`kernel_cases.json: the decode perf cases differ in ${what}: ${values.join(' vs ')}`);
  return JSON.parse(values[0]);
};
if (DECODE_CASES.some((c) => c.dk !== c.dv)) throw new Error('kernel_cases.json: a decode perf case with dk != dv');
export const HEAD_DIM = alike('head width', (c) => [c.dk, c.dv])[0];
export const CONFIGS = DECODE_CASES.map((c) => ({ E: c.embedDim, h: c.heads, hkv: c.kvHeads }));
export const LENGTHS = alike('lengths', (c) => c.lengths);
export const QUICK_LENGTHS = alike('quickLengths', (c) => c.quickLengths);
export const PREFILL_LENGTH = 512;
// The self-check before any timing: a size where every cell is instant.
const CHECK = { config: { E: 256, h: 4, hkv: 2 }, n: 20 };

/** How many steps a cell takes from length n before it rewinds. */
const drift = (n) => Math.max(8, n / 16);

const now = () => performance.now();
const errorText = (e) => String(e?.message ?? e).split('\n')[0].slice(0, 200);

/** Projection weights in PyTorch's [out, in] layout; ~U(±1/√in) so that scores are O(1). */
export function makeDecodeWeights({ E, h, hkv }, seed = 1) {
  const d = HEAD_DIM;
  const linear = (rows, cols, s) => ({ w: filled(rows * cols, s, 1 / Math.sqrt(cols)), b: filled(rows, s + 1, 0.1) });
  return { q: linear(h * d, E, seed), k: linear(hkv * d, E, seed + 2), v: linear(hkv * d, E, seed + 4), o: linear(E, h * d, seed + 6) };
}

function concat(...parts) {
  const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  parts.reduce((at, p) => (out.set(p, at), at + p.length), 0);
  return out;
}

/** The state dict the module asks for: in_proj_weight when hkv = h, else q/k/v_proj_weight. */
function stateDict(specs, W) {
  const sd = { in_proj_bias: concat(W.q.b, W.k.b, W.v.b), 'out_proj.weight': W.o.w, 'out_proj.bias': W.o.b };
  if (specs.some((s) => s.name === 'in_proj_weight')) sd.in_proj_weight = concat(W.q.w, W.k.w, W.v.w);
  else Object.assign(sd, { q_proj_weight: W.q.w, k_proj_weight: W.k.w, v_proj_weight: W.v.w });
  return sd;
}

/** Bytes one step must read: f32 weights and biases of the projections; K and V of n positions. */
export function stepBytes({ E, h, hkv }, n) {
  const q = h * HEAD_DIM, kv = hkv * HEAD_DIM;
  return { weights: 4 * (E * q + 2 * E * kv + q * E + q + 2 * kv + E), cache: 4 * 2 * n * kv };
}

/** Rows [from, to) of x ([T, E]) as a [1, to − from, E] tensor (a view, no copy). */
const rows = (x, E, from, to) => ({ data: x.subarray(from * E, to * E), shape: [1, to - from, E] });

// ---- the cells: { name, rewind() (to length n), step(p) → output of the token at position p } --

function cachedCell({ mha, cache, x, E }, n) {
  return {
    name: 'cache',
    async rewind() {
      if (cache.length > n) cache.reset();
      if (cache.length < n) {
        const t = rows(x, E, cache.length, n);
        await mha.forward(t, t, t, { cache });
      }
    },
    async step(p) {
      const t = rows(x, E, p, p + 1);
      return (await mha.forward(t, t, t, { cache })).output.data;
    },
  };
}

function recomputeCell({ mha, x, E }) {
  return {
    name: 'noCache',
    async rewind() {},
    async step(p) {
      const all = rows(x, E, 0, p + 1);
      return (await mha.forward(rows(x, E, p, p + 1), all, all)).output.data;
    },
  };
}

function ortCell({ ort, stepSession, kvSession, x, E }, n) {
  let start = null, past = null;
  return {
    name: 'ort',
    async rewind() {
      start ??= await kvSession.run({ x: new ort.Tensor('float32', x.subarray(0, n * E), [1, n, E]) });
      past = start;
    },
    async step(p) {
      const r = await stepSession.run({
        x: new ort.Tensor('float32', x.subarray(p * E, (p + 1) * E), [1, 1, E]),
        past_key: past.past_key, past_value: past.past_value,
        seqlens_k: new ort.Tensor('int32', Int32Array.of(p), [1]),                // T − 1
        total_sequence_length: new ort.Tensor('int32', Int32Array.of(p + 1), []),  // T
      });
      past = { past_key: r.present_key, past_value: r.present_value };
      return r.y.data;
    },
  };
}

/**
 * Checks each cell's first step at length n against the first cell's, warms them up, then
 * times them interleaved. Cells get { output, maxDiff, times, ms, best, runs } or { error }.
 */
async function timeCells(cells, { n, span, budgetMs, minRuns = 3, maxRuns = 100 }) {
  const advance = async (c) => {
    if (c.p === undefined || c.p - n >= span) {
      await c.rewind();
      c.p = n;
    }
    const t0 = now();
    const output = await c.step(c.p);
    const t = now() - t0;
    c.p++;
    return { output, t };
  };
  const guarded = async (c, f) => {
    try {
      await f();
    } catch (e) {
      c.error = errorText(e);
    }
  };
  for (const c of cells) {
    await guarded(c, async () => {
      c.output = Float32Array.from((await advance(c)).output);
      c.maxDiff = maxAbsDiff(c.output, cells[0].output);
      let spent = 0, count = 0, fastest = Infinity;
      while (count < 2 || (spent < Math.min(300, budgetMs / 5) && count < 20)) {
        const { t } = await advance(c);
        [spent, count, fastest] = [spent + t, count + 1, Math.min(fastest, t)];
        if (t > budgetMs / 4) break;
      }
      c.runs = Math.max(minRuns, Math.min(maxRuns, Math.floor(budgetMs / fastest)));
      c.times = [];
    });
  }
  const pending = () => cells.filter((c) => !c.error && c.times.length < c.runs);
  for (let left = pending(); left.length; left = pending()) {
    for (const c of left) await guarded(c, async () => c.times.push((await advance(c)).t));
  }
  for (const c of cells.filter((cell) => !cell.error)) {
    const sorted = [...c.times].sort((a, b) => a - b);
    Object.assign(c, { ms: median(sorted), best: sorted[0] });
  }
}

const summary = ({ ms, best, runs, maxDiff, error }) => ({ ms, best, runs, maxDiff, error });

// ---- one configuration ------------------------------------------------------------------------

async function setupConfig(libs, config, maxLength) {
  const { E, h, hkv } = config;
  const W = makeDecodeWeights(config, 1000 + E);
  const mha = await libs.MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, threads: 1, backend: 'wasm' });
  mha.loadStateDict(stateDict(mha.stateDictShapes, W));
  const options = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  const graph = { E, numHeads: h, numKvHeads: hkv, headDim: HEAD_DIM, weights: W };
  const ctx = {
    ort: libs.ort, E, mha,
    cache: mha.createCache({ batchSize: 1, maxLength: maxLength + drift(maxLength) + 1 }),
    x: filled((maxLength + drift(maxLength) + 1) * E, 7 + E, 1),
    stepSession: await libs.ort.InferenceSession.create(buildGqaStepModel(graph), options),
    kvSession: await libs.ort.InferenceSession.create(buildKvProjectionModel(graph), options),
  };
  ctx.dispose = async () => {
    await ctx.stepSession.release();
    await ctx.kvSession.release();
    mha.dispose();  // frees its caches too
  };
  return ctx;
}

/** The three decode cells at length n: a row { ...config, n, cache, noCache, ort, bytes }. */
async function decodeRow(ctx, config, n, timing) {
  const cells = [cachedCell(ctx, n), recomputeCell(ctx), ortCell(ctx, n)];
  await timeCells(cells, { n, span: drift(n), ...timing });
  return { ...config, n, bytes: stepBytes(config, n), ...Object.fromEntries(cells.map((c) => [c.name, summary(c)])) };
}

/** Prefill of PREFILL_LENGTH tokens: into an empty cache vs a plain causal forward. */
async function prefillRow({ mha, x, E }, config, budgetMs) {
  const L = PREFILL_LENGTH, t = rows(x, E, 0, L);
  const cache = mha.createCache({ batchSize: 1, maxLength: L });
  const once = (step) => ({ rewind: async () => {}, step });
  const cells = [
    { name: 'cache', ...once(async () => { cache.reset(); return (await mha.forward(t, t, t, { cache })).output.data; }) },
    { name: 'causal', ...once(async () => (await mha.forward(t, t, t, { isCausal: true })).output.data) },
  ];
  await timeCells(cells, { n: L, span: Infinity, budgetMs });
  cache.dispose();
  return { ...config, L, ...Object.fromEntries(cells.map((c) => [c.name, summary(c)])) };
}

/**
 * Every cell at a size where each is instant; throws when ORT or (b) disagree with (a). Then
 * each cell steps for warmUpMs untimed: engines run WASM on a baseline compiler first and
 * optimize hot functions later (in Chromium ORT's steps were several times slower before).
 */
async function selfCheck(libs, warmUpMs) {
  const ctx = await setupConfig(libs, CHECK.config, CHECK.n);
  try {
    const row = await decodeRow(ctx, CHECK.config, CHECK.n, { budgetMs: warmUpMs, maxRuns: Infinity });
    for (const name of ['noCache', 'ort']) {
      const { maxDiff, error } = row[name];
      if (error || !(maxDiff <= DIFF_LIMIT)) {
        throw new Error(`self-check at (E, h, hkv) = ${configText(CHECK.config)}, n = ${CHECK.n}: ${name} ${error ?? `max|Δ| ${maxDiff} vs the cached forward`}`);
      }
    }
    return Math.max(row.noCache.maxDiff, row.ort.maxDiff);
  } finally {
    await ctx.dispose();
  }
}

/**
 * libs: { MultiHeadAttention, ort }. Returns { check (self-check max|Δ|), decode: rows,
 * prefill: rows }; log(line) hears each row as it is done.
 */
export async function runDecodeSuite(libs, { lengths = LENGTHS, budgetMs = 1500, warmUpMs = 2000, log = () => {} } = {}) {
  const check = await selfCheck(libs, warmUpMs);  // before any timing: no table from a wrong graph
  log(`self-check ${checkText(check)}`);
  const decode = [], prefill = [];
  for (const config of CONFIGS) {
    const ctx = await setupConfig(libs, config, Math.max(...lengths));
    try {
      for (const n of lengths) {
        decode.push(await decodeRow(ctx, config, n, { budgetMs }));
        log(plainTable(DECODE_COLUMNS(null), decode.slice(-1)).split('\n').pop());
      }
      prefill.push(await prefillRow(ctx, config, budgetMs));
      log(plainTable(PREFILL_COLUMNS, prefill.slice(-1)).split('\n').pop());
    } finally {
      await ctx.dispose();
    }
  }
  return { check, decode, prefill };
}

/**
 * One environment's whole run (Node or the page): ORT on one thread, the read bandwidth before
 * and after the suite (membwBytes: build/membw/membw.wasm). libs: { MultiHeadAttention,
 * capabilities, ort }. Resolves to runDecodeSuite's result + { bandwidth: { before, after },
 * libraries (text) }.
 */
export async function runDecodeBench(libs, membwBytes, { quick = false, budgetMs, log }) {
  const { ort } = libs;
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  const before = await measureReadBandwidth(membwBytes);
  log(`read bandwidth ${before.gbps.toFixed(1)} GB/s`);
  const result = await runDecodeSuite(libs, { lengths: quick ? QUICK_LENGTHS : LENGTHS, budgetMs, log });
  const after = await measureReadBandwidth(membwBytes);
  const libraries = `webattention module '${(await libs.capabilities()).wasmModule}', threads 1; `
    + `onnxruntime-web ${ort.env.versions?.web ?? '?'} (wasm EP, numThreads 1)`;
  return { ...result, bandwidth: { before, after }, libraries };
}

// ---- output -------------------------------------------------------------------------------------

const fixed = (v, digits = v < 10 ? 3 : 1) => (Number.isFinite(v) ? v.toFixed(digits) : '-');
const ratio = (a, b) => fixed(a / b, 2);
const diff = ({ maxDiff, error }) => (error ? `ERROR: ${error}` : `${maxDiff.toExponential(1)}${maxDiff > DIFF_LIMIT ? ' !' : ''}`);
const configText = ({ E, h, hkv }) => `(${E}, ${h}, ${hkv})`;
const boundMs = (r, gbps) => (r.bytes.weights + r.bytes.cache) / (gbps * 1e6);

/** The self-check's line for the header. */
export const checkText = (check) => `(E, h, hkv) = ${configText(CHECK.config)}, n = ${CHECK.n}: `
  + `(b) and ORT within ${check.toExponential(1)} of (a)`;

/** Decode table columns; gbps null leaves the bound columns out (the running log). */
export const DECODE_COLUMNS = (gbps) => [
  ['(E, h, hkv)', configText, 'l'],
  ['n', (r) => String(r.n), 'r'],
  ['(a) cache ms', (r) => fixed(r.cache.ms), 'r'],
  ['(b) no cache ms', (r) => fixed(r.noCache.ms), 'r'],
  ['(c) ORT ms', (r) => fixed(r.ort.ms), 'r'],
  ...(gbps ? [['(d) bound ms', (r) => fixed(boundMs(r, gbps)), 'r']] : []),
  ['(c)/(a)', (r) => ratio(r.ort.ms, r.cache.ms), 'r'],
  ...(gbps ? [['(a)/(d)', (r) => ratio(r.cache.ms, boundMs(r, gbps)), 'r']] : []),
  ['(b)/(a)', (r) => ratio(r.noCache.ms, r.cache.ms), 'r'],
  ['max|Δ| (b)', (r) => diff(r.noCache), 'r'],
  ['max|Δ| (c)', (r) => diff(r.ort), 'r'],
  ['best ms a/b/c', (r) => [r.cache, r.noCache, r.ort].map((c) => fixed(c.best)).join('/'), 'r'],
  ['runs a/b/c', (r) => [r.cache, r.noCache, r.ort].map((c) => c.runs ?? '-').join('/'), 'r'],
];

export const PREFILL_COLUMNS = [
  ['(E, h, hkv)', configText, 'l'],
  ['L', (r) => String(r.L), 'r'],
  ['cache ms', (r) => fixed(r.cache.ms), 'r'],
  ['isCausal ms', (r) => fixed(r.causal.ms), 'r'],
  ['cache/isCausal', (r) => ratio(r.cache.ms, r.causal.ms), 'r'],
  ['max|Δ|', (r) => diff(r.cache.error ? r.cache : r.causal), 'r'],
  ['runs', (r) => `${r.cache.runs ?? '-'}/${r.causal.runs ?? '-'}`, 'r'],
];

/**
 * Least-squares line through (n, best ms) of a configuration's rows: (a)'s fixed cost (n → 0: the
 * projections and the call) and its cost per 1000 cached positions (the attention over the
 * cache), each against the same split of the bound. The best step, not the median: on a shared
 * machine the medians of the longer steps carry most of the other processes' noise.
 */
export function splitText(decodeRows, gbps) {
  return CONFIGS.map((config) => {
    const r = decodeRows.filter((row) => row.E === config.E && Number.isFinite(row.cache.best));
    if (r.length < 2) return null;
    const mean = (f) => r.reduce((s, row) => s + f(row), 0) / r.length;
    const mn = mean((row) => row.n), mt = mean((row) => row.cache.best);
    const slope = mean((row) => (row.n - mn) * (row.cache.best - mt)) / mean((row) => (row.n - mn) ** 2);
    const fixedMs = mt - slope * mn;
    const b = stepBytes(config, 1000);
    const boundFixed = b.weights / (gbps * 1e6), boundPer1000 = b.cache / (gbps * 1e6);
    return `${configText(config)}, (a)'s best steps: fixed part (n → 0) ${fixed(fixedMs)} ms vs ${fixed(boundFixed)} ms to read the weights `
      + `(${ratio(fixedMs, boundFixed)}×); per 1000 cached positions ${fixed(slope * 1000)} ms vs ${fixed(boundPer1000)} ms `
      + `to read their K/V (${ratio(slope * 1000, boundPer1000)}×)`;
  }).filter(Boolean).join('\n');
}

const breakBetweenConfigs = (r, next) => next.E !== r.E;

export function formatDecode({ decode, prefill }, gbps, { markdown = false } = {}) {
  const table = markdown ? (columns, rows) => markdownTable(columns, rows)
    : (columns, rows) => plainTable(columns, rows, { breakAfter: breakBetweenConfigs });
  return `${table(DECODE_COLUMNS(gbps), decode)}\n\n${splitText(decode, gbps)}\n\n`
    + `Prefill of ${PREFILL_LENGTH} tokens:\n\n${table(PREFILL_COLUMNS, prefill)}`;
}
