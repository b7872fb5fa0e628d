// The decode benchmark itself, shared by Node (bench/decode/decode.mjs) and the browsers
// (bench/browser/suite.html?suite=decode, runDecodePage()): the libraries and the measured bandwidth come in as arguments.
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
//       real ORT decode loop pays them. One graph per timed dtype, its weights stored as that
//       dtype's (decode_dtypes.mjs: f32 MatMul, an f16 model's Cast + MatMul, MatMulNBits 8/4-bit).
//   (d) the memory bound: the bytes a step must read (the four projections' f32 weights and
//       biases, the n cached positions' K and V in f32) / the measured read bandwidth.
// Every cell's first step (at length n) is compared with (a)'s output before timing. The steps
// of a cell at length n run at lengths n … n + drift(n) − 1 (each appends one position), after
// which the cell rewinds to n untimed ((a): reset() and prefill n; (b) and (c): back to the
// saved state), so the timed lengths stay within n/16 of n. Cells are timed interleaved, one
// step each per round (a slow spell of the machine hits all three alike): median and best.
// Prefill: 512 tokens into an empty cache against forward(x, x, x, { isCausal: true }).
import { measureReadBandwidth } from '../limits/membw/measure.mjs';
import { buildGqaStepModel, buildKvProjectionModel } from '../lib/onnx_decode_model.mjs';
import { perfCases } from '../../tests/cases/cases.mjs';
import { DIFF_LIMIT, filled, maxAbsDiff, median } from '../lib/suite.mjs';
import { plainTable } from '../lib/table.mjs';
import { DTYPES, REFERENCE_DTYPE, parseDtypes, stepBytes } from './decode_dtypes.mjs';
import { DECODE_COLUMNS, PREFILL_COLUMNS, configText, perDtype, perPrefillDtype } from './decode_table.mjs';

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
export function stateDict(specs, W) {
  const sd = { in_proj_bias: concat(W.q.b, W.k.b, W.v.b), 'out_proj.weight': W.o.w, 'out_proj.bias': W.o.b };
  if (specs.some((s) => s.name === 'in_proj_weight')) sd.in_proj_weight = concat(W.q.w, W.k.w, W.v.w);
  else Object.assign(sd, { q_proj_weight: W.q.w, k_proj_weight: W.k.w, v_proj_weight: W.v.w });
  return sd;
}

/** The tables' layout: what formatDecode() needs to know of the suite. */
export const LAYOUT = { configs: CONFIGS, headDim: HEAD_DIM, prefillLength: PREFILL_LENGTH };

/** Rows [from, to) of x ([T, E]) as a [1, to − from, E] tensor (a view, no copy). */
export const rows = (x, E, from, to) => ({ data: x.subarray(from * E, to * E), shape: [1, to - from, E] });

// ---- the cells: { name, rewind() (to length n), step(p) → output of the token at position p } --

function cachedCell({ x, E }, { dtype, mha, cache }, n) {
  return {
    name: `cache:${dtype}`,
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

function recomputeCell({ models, x, E }) {
  const { mha } = models[0];
  return {
    name: 'noCache',
    async rewind() {},
    async step(p) {
      const all = rows(x, E, 0, p + 1);
      return (await mha.forward(rows(x, E, p, p + 1), all, all)).output.data;
    },
  };
}

function ortCell({ ort, stepSessions, kvSession, x, E }, n, dtype) {
  const stepSession = stepSessions[dtype];
  let start = null, past = null;
  return {
    name: `ort:${dtype}`,
    async rewind() {
      if (stepSession.error) throw stepSession.error;
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
/** Cells named `group:dtype` as { dtype: summary } under row[group]; the others by name. */
function rowCells(cells) {
  const row = {};
  for (const c of cells) {
    const [group, dtype] = c.name.split(':');
    if (dtype) (row[group] ??= {})[dtype] = summary(c);
    else row[group] = summary(c);
  }
  return row;
}

// ---- one configuration ------------------------------------------------------------------------

/** One module (and a cache of cacheLength positions, if given) per storage dtype, as listed. */
async function createModels(libs, { E, h, hkv }, W, dtypes, cacheLength) {
  const models = [];
  try {
    for (const dtype of dtypes) {
      const mha = await libs.MultiHeadAttention.create({ embedDim: E, numHeads: h, numKvHeads: hkv, threads: 1, backend: 'wasm',
        weightsDtype: DTYPES[dtype].weights, ...(DTYPES[dtype].activations ? { activations: DTYPES[dtype].activations } : {}) });
      models.push({ dtype, mha, cache: null });
      mha.loadStateDict(stateDict(mha.stateDictShapes, W));
      if (cacheLength) models.at(-1).cache = mha.createCache({ batchSize: 1, maxLength: cacheLength, dtype: DTYPES[dtype].cache });
    }
  } catch (e) {
    for (const { mha } of models) mha.dispose();
    throw e;
  }
  return models;
}

async function setupConfig(libs, config, maxLength, dtypes) {
  const { E, h, hkv } = config;
  const W = makeDecodeWeights(config, 1000 + E);
  const options = { executionProviders: ['wasm'], graphOptimizationLevel: 'all' };
  const graph = { E, numHeads: h, numKvHeads: hkv, headDim: HEAD_DIM, weights: W };
  const ctx = {
    ort: libs.ort, E,
    models: await createModels(libs, config, W, dtypes, maxLength + drift(maxLength) + 1),
    x: filled((maxLength + drift(maxLength) + 1) * E, 7 + E, 1),
    stepSessions: {},
    kvSession: await libs.ort.InferenceSession.create(buildKvProjectionModel(graph), options),
  };
  for (const dtype of dtypes) {
    // A graph the wasm EP cannot run (an op or a type it lacks) makes a cell with an error, not a failed run.
    const projections = DTYPES[dtype].ort;
    ctx.stepSessions[dtype] = projections
      ? await libs.ort.InferenceSession.create(buildGqaStepModel({ ...graph, projections }), options).catch((error) => ({ error }))
      : { error: new Error(`no ORT graph for ${dtype} weights`) };
  }
  ctx.dispose = async () => {
    for (const session of Object.values(ctx.stepSessions)) await session.release?.();
    await ctx.kvSession.release();
    for (const { mha } of ctx.models) mha.dispose();  // frees their caches too
  };
  return ctx;
}

/**
 * The decode cells at length n (the f32 cache first: the others are compared with it): a row
 * { ...config, n, cache: { dtype: cell }, noCache, ort: { dtype: cell }, bytes: { dtype: stepBytes } }.
 */
async function decodeRow(ctx, config, n, timing) {
  const dtypes = ctx.models.map((m) => m.dtype);
  const cells = [...ctx.models.map((m) => cachedCell(ctx, m, n)), recomputeCell(ctx), ...dtypes.map((dtype) => ortCell(ctx, n, dtype))];
  await timeCells(cells, { n, span: drift(n), ...timing });
  const bytes = Object.fromEntries(ctx.models.map(({ dtype }) => [dtype, stepBytes(config, HEAD_DIM, n, dtype)]));
  return { ...config, n, bytes, ...rowCells(cells) };
}

/**
 * Prefill of PREFILL_LENGTH tokens: a plain causal forward per weights dtype, and into an empty
 * f32 cache (all compared with the f32 causal forward).
 */
async function prefillRow({ models, x, E }, config, budgetMs) {
  const L = PREFILL_LENGTH, t = rows(x, E, 0, L);
  const cache = models[0].mha.createCache({ batchSize: 1, maxLength: L });
  const once = (name, step) => ({ name, rewind: async () => {}, step });
  const cells = [
    ...models.map(({ dtype, mha }) => once(`causal:${dtype}`, async () => (await mha.forward(t, t, t, { isCausal: true })).output.data)),
    once('cache', async () => { cache.reset(); return (await models[0].mha.forward(t, t, t, { cache })).output.data; }),
  ];
  await timeCells(cells, { n: L, span: Infinity, budgetMs });
  cache.dispose();
  return { ...config, L, ...rowCells(cells) };
}

/**
 * WASM heap bytes a module of dtype holds for its weights (create + loadStateDict) and for a
 * cache of n positions (createCache), by wasmMemoryInUse() before and after, against §11's count.
 */
async function memoryRow(libs, config, dtype, n) {
  const W = makeDecodeWeights(config, 1000 + config.E);
  const inUse = () => libs.wasmMemoryInUse();
  const start = await inUse();
  const [model] = await createModels(libs, config, W, [dtype], 0);
  try {
    const loaded = await inUse();
    const cache = model.mha.createCache({ batchSize: 1, maxLength: n, dtype: DTYPES[dtype].cache });
    const cached = await inUse();
    cache.dispose();
    return { ...config, dtype, n, expected: stepBytes(config, HEAD_DIM, n, dtype), measured: { weights: loaded - start, cache: cached - loaded } };
  } finally {
    model.mha.dispose();
  }
}

/** The memory rows alone (decode.mjs --memory): every configuration and dtype, a cache of n positions. */
export async function runMemoryTable(libs, { dtypes = Object.keys(DTYPES), n = Math.max(...LENGTHS) } = {}) {
  const memory = [];
  for (const config of CONFIGS) for (const dtype of dtypes) memory.push(await memoryRow(libs, config, dtype, n));
  return memory;
}

/**
 * Every cell at a size where each is instant; throws when ORT or (b) disagree with (a). Then
 * each cell steps for warmUpMs untimed: engines run WASM on a baseline compiler first and
 * optimize hot functions later (in Chromium ORT's steps were several times slower before).
 */
async function selfCheck(libs, dtypes, warmUpMs) {
  const ctx = await setupConfig(libs, CHECK.config, CHECK.n, dtypes);
  try {
    const row = await decodeRow(ctx, CHECK.config, CHECK.n, { budgetMs: warmUpMs, maxRuns: Infinity });
    // ORT's narrow graphs differ by their rounding (the table shows it); f32 must agree.
    for (const [name, cell] of [['noCache', row.noCache], ['ORT', row.ort[REFERENCE_DTYPE]]]) {
      const { maxDiff, error } = cell;
      if (error || !(maxDiff <= DIFF_LIMIT)) {
        throw new Error(`self-check at (E, h, hkv) = ${configText(CHECK.config)}, n = ${CHECK.n}: ${name} ${error ?? `max|Δ| ${maxDiff} vs the cached forward`}`);
      }
    }
    return Math.max(row.noCache.maxDiff, row.ort[REFERENCE_DTYPE].maxDiff);
  } finally {
    await ctx.dispose();
  }
}

/**
 * libs: { MultiHeadAttention, ort }. Returns { check (self-check max|Δ|), decode: rows,
 * prefill: rows }; log(line) hears each row as it is done.
 */
export async function runDecodeSuite(libs, { dtypes = Object.keys(DTYPES), lengths = LENGTHS, budgetMs = 1500, warmUpMs = 2000,
  log = () => {} } = {}) {
  if (dtypes[0] !== REFERENCE_DTYPE) throw new Error(`runDecodeSuite: dtypes must start with ${REFERENCE_DTYPE}, got ${dtypes.join(',')}`);
  const check = await selfCheck(libs, dtypes, warmUpMs);  // before any timing: no table from a wrong graph
  log(`self-check ${checkText(check)}`);
  const decode = [], prefill = [], memory = [];
  const maxLength = Math.max(...lengths);
  for (const config of CONFIGS) {
    for (const dtype of dtypes) memory.push(await memoryRow(libs, config, dtype, maxLength));
    const ctx = await setupConfig(libs, config, maxLength, dtypes);
    try {
      for (const n of lengths) {
        decode.push(await decodeRow(ctx, config, n, { budgetMs }));
        for (const line of plainTable(DECODE_COLUMNS(null), perDtype(decode.slice(-1))).split('\n').slice(2)) log(line);
      }
      prefill.push(await prefillRow(ctx, config, budgetMs));
      for (const line of plainTable(PREFILL_COLUMNS, perPrefillDtype(prefill.slice(-1))).split('\n').slice(2)) log(line);
    } finally {
      await ctx.dispose();
    }
  }
  return { check, decode, prefill, memory };
}

/** The self-check's line for the header. */
export const checkText = (check) => `(E, h, hkv) = ${configText(CHECK.config)}, n = ${CHECK.n}: `
  + `(b) and ORT within ${check.toExponential(1)} of (a)`;

/**
 * One environment's whole run (Node or the page): ORT on one thread, the read bandwidth before
 * and after the suite (membwBytes: build/membw/membw.wasm). libs: { MultiHeadAttention,
 * wasmMemoryInUse, capabilities, ort }. Resolves to runDecodeSuite's result + { bandwidth:
 * { before, after }, libraries (text) }.
 */
export async function runDecodeBench(libs, membwBytes, { quick = false, dtypes, budgetMs, log }) {
  const { ort } = libs;
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = 'error';
  const before = await measureReadBandwidth(membwBytes);
  log(`read bandwidth ${before.gbps.toFixed(1)} GB/s`);
  const result = await runDecodeSuite(libs, { dtypes, lengths: quick ? QUICK_LENGTHS : LENGTHS, budgetMs, log });
  const after = await measureReadBandwidth(membwBytes);
  const libraries = `webattention module '${(await libs.capabilities()).wasmModule}', threads 1; `
    + `onnxruntime-web ${ort.env.versions?.web ?? '?'} (wasm EP, numThreads 1)`;
  return { ...result, bandwidth: { before, after }, libraries };
}

/**
 * The page's run (bench/browser/suite.html?suite=decode&quick=0|1&budget=MS&dtypes=f32,f16,i8):
 * ORT's wasm-only ESM bundle from bench/node_modules, the bandwidth kernel from build/membw/.
 */
export async function runDecodePage({ MultiHeadAttention, wasmMemoryInUse, capabilities }, q, log) {
  const ort = await import('/bench/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs');
  const membw = await (await fetch('/build/membw/membw.wasm')).arrayBuffer();
  return runDecodeBench({ MultiHeadAttention, wasmMemoryInUse, capabilities, ort }, membw, {
    quick: q.get('quick') === '1', dtypes: parseDtypes(q.get('dtypes') ?? 'f32,f16,i8'), budgetMs: Number(q.get('budget') ?? 1500), log,
  });
}
