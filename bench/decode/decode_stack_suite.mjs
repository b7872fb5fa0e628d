// The model-sized decode benchmark, shared by Node (bench/decode/decode_stack.mjs) and the browser
// page (bench/browser/suite.html?suite=decode_stack, runDecodeStackPage()): the library and the measured bandwidth come in as
// arguments.
//
// Why a stack: one layer's weights fit in the CPU's last-level cache, where float32 is not bound
// by memory and narrow storage cannot show what it saves. A model is many layers, each read once
// per token from memory. So: `layers` attention modules (default 24 at E 2048, 32 heads, 8 KV
// heads, RoPE, head width 64: 1 GB of float32 weights), each with a KV cache already holding
// `cacheLength` positions, each layer fed the previous one's output, as a model's residual stream
// would be (without its feed-forward: attention alone is timed). One token = one forward of
// L = 1 through every layer, from a JS Float32Array to a JS Float32Array.
//
// Every storage setting (a weights dtype, its cache dtype and the activations mode) has a stack
// of its own, all in one WASM memory, built from the same float32 weights. The settings are timed
// interleaved, one token each per round in a rotating order, so a slow spell of the machine
// hits them alike; after `drift` tokens every cache is truncated back to cacheLength, untimed,
// so the timed lengths stay within drift of it. The first token of each setting is compared with
// float32's (max |Δ|, a sanity check: the exact comparisons are the tests').
// The bound: the bytes one token must read (every layer's weights, scales and biases, and its
// cached K/V: decode_dtypes.mjs's stepBytes) / the measured one-thread read bandwidth.
import { measureReadBandwidth } from '../limits/membw/measure.mjs';
import { filled, maxAbsDiff, median } from '../lib/suite.mjs';
import { DTYPES, parseDtypes, stepBytes } from './decode_dtypes.mjs';
import { makeDecodeWeights, stateDict } from './decode_suite.mjs';

// warmup: untimed tokens per setting before the timed ones (interleaved as they are). The first
// few dozen tokens run slower while the engine still tiers code up (V8's WebAssembly from Liftoff
// to TurboFan, the JS around each call): in Node, two threads, int4 with int8 activations, the
// first 40 tokens ran at 12.5 ms, tokens 120-1200 at 10.2-10.3 ms (one thread: 18.6 against
// 17.7-17.9); a model generating text runs at the later pace.
export const STACK_DEFAULTS = { layers: 24, E: 2048, h: 32, hkv: 8, headDim: 64, cacheLength: 512, tokens: 24, warmup: 48, drift: 8 };

const now = () => performance.now();

/**
 * Whether this build's forward() takes `out` (the caller's output array; builds before it refuse
 * the option): stack_ab.mjs may load one.
 */
async function takesOut(MultiHeadAttention) {
  const mha = await MultiHeadAttention.create({ embedDim: 2, numHeads: 1, backend: 'wasm', threads: 1 });
  try {
    mha.loadStateDict(Object.fromEntries(mha.stateDictShapes.map(({ name, shape }) => [name, { data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape }])));
    const x = { data: new Float32Array(2), shape: [1, 1, 2] };
    await mha.forward(x, x, x, { out: new Float32Array(2) });
    return true;
  } catch (e) {
    if (e.argument === 'out') return false;
    throw e;
  } finally {
    mha.dispose();
  }
}

/**
 * One stack per setting name (DTYPES), layer by layer so that one layer's float32 weights live at
 * a time. Each layer writes its output into an array of its own (forward's `out`), as a model's
 * loop would, unless shape.freshOutputs (or the build predates `out`): then every call makes a new one.
 */
export async function createStacks(MultiHeadAttention, shape, settings, log) {
  const reuse = !shape.freshOutputs && await takesOut(MultiHeadAttention);
  const stacks = settings.map((name) => ({ name, layers: [], outputs: reuse ? 'reused' : 'fresh' }));
  const maxLength = shape.cacheLength + shape.drift + 1;
  for (let i = 0; i < shape.layers; i++) {
    const W = makeDecodeWeights(shape, 100 + 10 * i);  // layer i's own
    for (const stack of stacks) {
      const { weights, cache, activations } = DTYPES[stack.name];
      const mha = await MultiHeadAttention.create({
        embedDim: shape.E, numHeads: shape.h, numKvHeads: shape.hkv, rotary: { base: 10000 }, threads: shape.threads,
        backend: 'wasm', weightsDtype: weights, ...(activations ? { activations } : {}),
      });
      mha.loadStateDict(stateDict(mha.stateDictShapes, W));
      const kvCache = mha.createCache({ batchSize: 1, maxLength, dtype: cache });
      const options = reuse ? { cache: kvCache, out: new Float32Array(shape.E) } : { cache: kvCache };
      stack.layers.push({ mha, cache: kvCache, options });
    }
    if ((i + 1) % 6 === 0) log(`created layer ${i + 1} of ${shape.layers}`);
  }
  return stacks;
}

/** One token through every layer of a stack: the last layer's output (its own array, when reused: copy it to keep it). */
export async function token(stack, x, E) {
  let h = x;
  for (const { mha, options } of stack.layers) {
    const x = { data: h, shape: [1, 1, E] };
    h = (await mha.forward(x, x, x, options)).output.data;
  }
  return h;
}

/** Fills every layer's cache with cacheLength positions: one prefill call per layer, fed forward. Resolves to its ms. */
export async function prefill(stack, { E, cacheLength }) {
  let h = filled(cacheLength * E, 7, 1);
  const t0 = now();
  for (const { mha, cache } of stack.layers) {
    const x = { data: h, shape: [1, cacheLength, E] };
    h = (await mha.forward(x, x, x, { cache })).output.data;
  }
  return now() - t0;
}

/** Truncates every layer's cache of a stack back to `length` positions. */
export const rewind = (stack, length) => { for (const { cache } of stack.layers) cache.truncate(length); };

/** ms of one token through `stack` (token() timed). */
export async function timeToken(stack, x, E) {
  const t0 = now();
  await token(stack, x, E);
  return now() - t0;
}

/**
 * shape.warmup untimed rounds, then shape.tokens timed ones: round(t, timed) for t from
 * -warmup on, every stack of `stacks` truncated back to cacheLength every `drift` rounds, so that
 * the timed lengths stay within drift of it. Shared by runDecodeStack and stack_ab.mjs.
 */
export async function tokenRounds(shape, stacks, round) {
  for (let t = -shape.warmup; t < shape.tokens; t++) {
    if (t % shape.drift === 0) stacks.forEach((s) => rewind(s, shape.cacheLength));
    await round(t, t >= 0);
  }
}

/**
 * Runs the benchmark. libs: { MultiHeadAttention }; membwBytes: build/membw/membw.wasm's bytes,
 * or null for no bandwidth and no bounds. settings: DTYPES names, the first the reference.
 * Resolves to { shape, bandwidth, rows: [{ name, ms (median per token), best, diff (first token
 * vs the reference), prefillMs (the one prefill of cacheLength positions through
 * the stack), bytes, boundMs }] }.
 */
export async function runDecodeStack(libs, membwBytes, { settings, log = () => {}, ...options }) {
  const shape = stackShape(options);
  const bandwidth = membwBytes ? await measureReadBandwidth(membwBytes, { megabytes: 1024, passes: 12 }) : null;
  log(`${bandwidth ? `read bandwidth ${bandwidth.gbps.toFixed(1)} GB/s; ` : ''}creating ${settings.length} stacks of ${shape.layers} layers`);
  const stacks = await createStacks(libs.MultiHeadAttention, shape, settings, log);
  try {
    const prefillMs = [];
    for (const stack of stacks) prefillMs.push(await prefill(stack, shape));
    log(`prefilled ${shape.cacheLength} positions per layer`);
    const x = filled(shape.E, 11, 1);
    const firsts = [];
    for (const stack of stacks) { firsts.push((await token(stack, x, shape.E)).slice()); rewind(stack, shape.cacheLength); }
    const times = stacks.map(() => []);
    await tokenRounds(shape, stacks, async (t, timed) => {
      for (let k = 0; k < stacks.length; k++) {
        const s = (t + shape.warmup + k) % stacks.length;  // a rotating order
        const ms = await timeToken(stacks[s], x, shape.E);
        if (timed) times[s].push(ms);
      }
    });
    return { shape, bandwidth, outputs: stacks[0].outputs, rows: stacks.map((stack, s) => ({ ...row(stack.name, times[s], maxAbsDiff(firsts[s], firsts[0]), shape, bandwidth), prefillMs: prefillMs[s] })) };
  } finally {
    for (const stack of stacks) for (const { mha } of stack.layers) mha.dispose();
  }
}

function row(name, times, diff, shape, bandwidth) {
  const sorted = [...times].sort((a, b) => a - b);
  const perLayer = stepBytes(shape, shape.headDim, shape.cacheLength + shape.drift / 2, name);
  const bytes = shape.layers * (perLayer.weights + perLayer.cache);
  return { name, ms: median(sorted), best: sorted[0], diff, bytes, boundMs: bandwidth ? bytes / (bandwidth.gbps * 1e6) : null };
}

/** The stack a run builds: STACK_DEFAULTS and one thread, with `options` (sizes) over them. */
export const stackShape = (options) => ({ ...STACK_DEFAULTS, threads: 1, ...options });

/**
 * The command line's sizes (the flags' text, or undefined where not given: layers, tokens, warmup,
 * cache, threads, shape) → runDecodeStack's options; throws an Error naming the flag.
 */
export function parseStackSizes({ layers, tokens, warmup, cache, threads, shape }) {
  const sizes = {};
  const flags = [['layers', 'layers', layers, 1], ['tokens', 'tokens', tokens, 1], ['warmup', 'warmup', warmup, 0],
    ['cache', 'cacheLength', cache, 1], ['threads', 'threads', threads, 1]];
  for (const [flag, key, text, least] of flags) {
    if (text === undefined) continue;
    sizes[key] = Number(text);
    if (!(Number.isInteger(sizes[key]) && sizes[key] >= least)) throw new Error(`--${flag}: expected an integer >= ${least}`);
  }
  return shape === undefined ? sizes : { ...sizes, ...parseStackShape(shape) };
}

/**
 * '--shape E/h/hkv' text → { E, h, hkv } (head width STACK_DEFAULTS.headDim), or throws an
 * Error saying what was expected.
 */
function parseStackShape(text) {
  const [E, h, hkv, ...rest] = text.split('/').map(Number);
  if (rest.length || ![E, h, hkv].every((n) => Number.isInteger(n) && n > 0) || E !== h * STACK_DEFAULTS.headDim || h % hkv) {
    throw new Error(`--shape: expected E/h/hkv with E = h * ${STACK_DEFAULTS.headDim} and hkv dividing h, got '${text}'`);
  }
  return { E, h, hkv };
}

/**
 * The page's run (bench/browser/suite.html?suite=decode_stack):
 * ?settings=&layers=&tokens=&warmup=&cacheLength=&threads=&E=&h=&hkv=&freshOutputs=1, bandwidth measured.
 */
export async function runDecodeStackPage({ MultiHeadAttention }, q, log) {
  const membw = await (await fetch('/build/membw/membw.wasm')).arrayBuffer();
  const sizes = Object.fromEntries(['layers', 'tokens', 'warmup', 'cacheLength', 'threads', 'E', 'h', 'hkv'].filter((k) => q.has(k)).map((k) => [k, Number(q.get(k))]));
  return runDecodeStack({ MultiHeadAttention }, membw, { settings: parseDtypes(q.get('settings') ?? 'f32'), ...sizes, freshOutputs: q.has('freshOutputs'), log });
}
