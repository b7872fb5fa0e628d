// The page side of bench/decode/llama_cpp.mjs: llama.cpp's WASM build (wllama) decoding GGUFs
// that scripts/write_gguf.mjs wrote, an 8-layer and a 1-layer model per weight type, and this
// package's 8-layer attention stack (decode_stack_suite.mjs) at the same shape, threads and cache
// length.
//
// wllama 3 has no call that decodes one token on its own: a completion is the unit. So each
// completion is a prompt of n tokens (filling the KV cache to n: its prefill) followed by
// `tokens` generated ones (decode over a cache of n to n + tokens), and the times are llama.cpp's
// own (the completion's `timings`: prompt_ms and predicted_per_token_ms, wall clock inside its
// worker, no round trip to the page). The 8- and 1-layer models are loaded side by side (a
// worker each) and their completions alternate, so a slow spell hits both; each prompt starts with
// a different character so that no completion reuses the last one's cache. Per layer:
// (8-layer − 1-layer) / 7, which cancels the embedding, the output head, sampling and the
// server loop. Each model first runs a short completion (8 tokens, 2 generated) as a warm-up.

import { runDecodeStack } from './decode_stack_suite.mjs';
import { median } from '../lib/suite.mjs';

const PROMPT_CHARS = 'abcdefghijklmnopqrstuvwxyz';

/** n ASCII characters (n tokens: write_gguf.mjs's vocabulary has no merges), from `start` on. */
const prompt = (n, start) => Array.from({ length: n }, (_, i) => PROMPT_CHARS[(start + i * 7) % PROMPT_CHARS.length]).join('');


/** A Wllama with `blob` loaded: flash attention on or off, f16 KV cache (llama.cpp's default). */
async function load(Wllama, wasmUrl, blob, { n, tokens, threads, flash }) {
  const w = new Wllama({ default: wasmUrl }, { suppressNativeLog: true });
  await w.loadModel([blob], { n_threads: threads, n_gpu_layers: 0, n_ctx: n + tokens + 64, n_batch: 512, log_level: 4,
    cache_type_k: 'f16', cache_type_v: 'f16', flash_attn: flash });
  return w;
}

/** One completion's llama.cpp timings: { promptN, promptMs, decodeMs (per generated token) }. */
async function complete(w, { n, tokens }, start) {
  const r = await w.createCompletion({ prompt: prompt(n, start), max_tokens: tokens, temperature: 0, ignore_eos: true, cache_prompt: false });
  const t = r.timings;
  if (!t || t.predicted_n !== tokens) throw new Error(`llama.cpp generated ${t?.predicted_n} tokens, expected ${tokens}`);
  return { promptN: t.prompt_n, promptMs: t.prompt_ms, decodeMs: t.predicted_per_token_ms };
}

/**
 * One weight type and flash setting: models { 8: Blob, 1: Blob }. Resolves to { deep, shallow
 * (each { decodeMs, promptMs, promptN }: medians), decodeMsPerLayer, prefillMsPerLayer }.
 */
export async function timeLlamaCpp(Wllama, wasmUrl, models, shape) {
  const deep = await load(Wllama, wasmUrl, models[8], shape), shallow = await load(Wllama, wasmUrl, models[1], shape);
  try {
    // wllama falls back to one thread where the page cannot share memory: refuse to time that as two.
    if (deep.getNumThreads() !== shape.threads) throw new Error(`llama.cpp runs ${deep.getNumThreads()} threads (multi-thread ${deep.isMultithread()}), expected ${shape.threads}`);
    for (const w of [deep, shallow]) await complete(w, { n: 8, tokens: 2 }, 0);
    const runs = { deep: [], shallow: [] };
    for (let r = 0; r < shape.repeats; r++) {
      runs.deep.push(await complete(deep, shape, 2 * r + 1));
      runs.shallow.push(await complete(shallow, shape, 2 * r + 2));
    }
    const summary = (list) => Object.fromEntries(['decodeMs', 'promptMs', 'promptN'].map((k) => [k, median(list.map((x) => x[k]).sort((a, b) => a - b))]));
    const d = summary(runs.deep), s = summary(runs.shallow);
    return { deep: d, shallow: s, decodeMsPerLayer: (d.decodeMs - s.decodeMs) / 7, prefillMsPerLayer: (d.promptMs - s.promptMs) / 7 };
  } finally {
    await deep.exit();
    await shallow.exit();
  }
}

/**
 * The whole page: query { E, h, hkv, n, threads, tokens, repeats, types (GGUF type names),
 * flash ('0,1'), wasm }, files: `/build/llama_cpp/<stem>.gguf` (llama_cpp.mjs's modelStem()).
 * Ours first (its own interleaving over every dtype), then llama.cpp type by type.
 */
export async function runLlamaCppPage({ MultiHeadAttention, Wllama }, q, log) {
  const int = (k) => Number(q.get(k));
  const shape = { E: int('E'), h: int('h'), hkv: int('hkv'), n: int('n'), threads: int('threads'), tokens: int('tokens'), repeats: int('repeats') };
  const types = q.get('types').split(','), flashes = q.get('flash').split(',').map((f) => f === '1');
  const ourNames = types.flatMap((t) => OUR_SETTINGS[t]);
  log(`ours: 8-layer stacks of ${ourNames.join(', ')}, n ${shape.n}, threads ${shape.threads}`);
  // Ours warms up as long as llama.cpp does before its median completion is timed: its warm-up
  // completion, then (the median of 3) one earlier completion of `tokens` tokens.
  const timed = Math.max(8, shape.tokens);
  const ours = await runDecodeStack({ MultiHeadAttention }, null, { settings: ourNames, layers: 8, E: shape.E, h: shape.h, hkv: shape.hkv,
    headDim: shape.E / shape.h, cacheLength: shape.n, tokens: timed, warmup: timed, threads: shape.threads, log });
  const llama = [];
  for (const type of types) {
    const fetchBlob = async (layers) => (await fetch(`/build/llama_cpp/${q.get(`model${layers}_${type}`)}.gguf`)).blob();
    const models = { 8: await fetchBlob(8), 1: await fetchBlob(1) };
    for (const flash of flashes) {
      log(`llama.cpp ${type}, flash attention ${flash ? 'on' : 'off'}`);
      llama.push({ type, flash, ...(await timeLlamaCpp(Wllama, q.get('wllamaWasm'), models, { ...shape, flash })) });
    }
  }
  return { shape, ours: ours.rows, llama };
}

/**
 * GGUF weight type → decode_dtypes.mjs's settings of the same width: float32 activations, and for
 * the quantised types also int8 activations, which is what llama.cpp's Q8_0 and Q4_0 matmuls do
 * (each input row quantised to q8_0 blocks, integer block dot products).
 */
export const OUR_SETTINGS = { F32: ['f32'], F16: ['f16'], Q8_0: ['i8', 'i8a8'], Q4_0: ['i4', 'i4a8'] };
