#!/usr/bin/env node
// llama.cpp itself against fromGguf(): scripts/write_gguf.mjs's llama model, in each weight type,
// run by llama.cpp's WASM build (wllama, npm @wllama/wllama: not a dependency; give the folder of
// its package) in headless Chromium, and by this package: every layer's attention a
// MultiHeadAttention.fromGguf() module, the rest of the llama block (RMSNorm, SwiGLU feed-forward,
// output head) in float64 here. Compared: the log-probabilities llama.cpp gives its top 8 next
// tokens after a prompt (one thread, f32 KV cache, flash attention off), and ours for the same
// tokens; then ours again with the other rotary pairing, which llama.cpp's must not match.
//   node scripts/check_gguf_llama_cpp.mjs WLLAMA_DIR [--types F32,F16,Q8_0,Q4_0] [--prompt TEXT]
// WLLAMA_DIR: the package folder (node_modules/@wllama/wllama, with esm/index.js and
// esm/wasm/wllama.wasm). CHROMIUM=... another browser binary (default /usr/bin/chromium).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { MultiHeadAttention, loadGguf } from '../web/src/node.js';
import { llamaModel } from './write_gguf.mjs';

const [dir, ...rest] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node scripts/check_gguf_llama_cpp.mjs WLLAMA_DIR [--types F32,F16,Q8_0,Q4_0] [--prompt TEXT]');
  process.exit(2);
}
const option = (name, fallback) => (rest.includes(name) ? rest[rest.indexOf(name) + 1] : fallback);
const types = option('--types', 'F32,F16,Q8_0,Q4_0').split(',');
const prompt = option('--prompt', 'hello world');
// A secure context (wllama's storage needs one); every request is answered by the route below.
const ORIGIN = 'http://localhost:8999';

const PAGE = `<!doctype html><script type="module">
import { Wllama } from './wllama/esm/index.js';
window.run = async (model, prompt) => {
  const w = new Wllama({ default: './wllama/esm/wasm/wllama.wasm' });
  await w.loadModelFromUrl(model, { n_threads: 1, n_gpu_layers: 0, n_ctx: 256, useCache: false,
    cache_type_k: 'f32', cache_type_v: 'f32', flash_attn: false, log_level: 4 });
  const r = await w.createCompletion({ prompt, max_tokens: 1, temperature: 0, logprobs: 8 });
  await w.exit();
  return r.choices[0].logprobs.content[0].top_logprobs.map((t) => [t.id, t.logprob]);
};
window.ready = true;
</script>`;

/** llama.cpp's [token id, log-probability] of its top 8 next tokens, per model file. */
async function llamaCpp(files) {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext();
    await context.route(`${ORIGIN}/**`, (route) => {
      const path = new URL(route.request().url()).pathname;
      if (path === '/') return route.fulfill({ body: PAGE, contentType: 'text/html' });
      if (path.startsWith('/model/')) return route.fulfill({ body: Buffer.from(files[path.slice(7, -5)]), contentType: 'application/octet-stream' });
      const type = path.endsWith('.wasm') ? 'application/wasm' : 'text/javascript';
      return route.fulfill({ path: join(dir, path.replace(/^\/wllama\//, '')), contentType: type });
    });
    const page = await context.newPage();
    await page.goto(`${ORIGIN}/`);
    await page.waitForFunction(() => window.ready);
    const out = {};
    for (const name of Object.keys(files)) out[name] = await page.evaluate(([m, p]) => window.run(m, p), [`${ORIGIN}/model/${name}.gguf`, prompt]);
    return out;
  } finally {
    await browser.close();
  }
}

/** The model's log-probabilities of `ids` after the prompt: attention by fromGguf() modules. */
async function ours(bytes, ids, flipPairing) {
  const file = loadGguf(bytes), floats = loadGguf(bytes, { dequantize: true });
  const md = file.metadata, W = (name) => floats.get(name).data;
  const E = md.get('llama.embedding_length'), F = md.get('llama.feed_forward_length'), eps = md.get('llama.attention.layer_norm_rms_epsilon');
  const tokens = [...new TextEncoder().encode(prompt)];  // one token per ASCII byte (no merges)
  const L = tokens.length;
  const rms = (x, w) => x.map((v, i) => {
    const t = Math.floor(i / E);
    let s = 0;
    for (let j = 0; j < E; j++) s += x[t * E + j] ** 2;
    return (v / Math.sqrt(s / E + eps)) * w[i % E];
  });
  const linear = (x, w, out, inn) => Float64Array.from({ length: L * out }, (_, k) => {
    const t = Math.floor(k / out), o = k % out;
    let s = 0;
    for (let i = 0; i < inn; i++) s += x[t * inn + i] * w[o * inn + i];
    return s;
  });
  const x = new Float64Array(L * E);
  tokens.forEach((id, t) => x.set(W('token_embd.weight').subarray(id * E, (id + 1) * E), t * E));
  for (let l = 0; l < md.get('llama.block_count'); l++) {
    const p = `blk.${l}.`;
    let mha = await MultiHeadAttention.fromGguf(file, { layer: l });
    if (flipPairing) {
      const { rotary, ...config } = mha.config;
      mha.dispose();
      mha = await MultiHeadAttention.create({ embedDim: E, numHeads: config.numHeads, numKvHeads: config.numKvHeads, bias: false,
        weightsDtype: config.weightsDtype, rotary: { base: rotary.base, dim: rotary.dim, interleaved: !rotary.interleaved } });
      mha.loadStateDict(file, { layout: 'gguf', prefix: p });
    }
    const h = { data: Float32Array.from(rms(x, W(`${p}attn_norm.weight`))), shape: [1, L, E] };
    const { output } = await mha.forward(h, h, h, { isCausal: true });
    mha.dispose();
    output.data.forEach((v, i) => { x[i] += v; });
    const h2 = rms(x, W(`${p}ffn_norm.weight`));
    const gate = linear(h2, W(`${p}ffn_gate.weight`), F, E), up = linear(h2, W(`${p}ffn_up.weight`), F, E);
    const down = linear(gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]), W(`${p}ffn_down.weight`), E, F);
    down.forEach((v, i) => { x[i] += v; });
  }
  const last = rms(x, W('output_norm.weight')).subarray((L - 1) * E);
  const logits = Array.from({ length: md.get('llama.vocab_size') }, (_, v) => last.reduce((s, a, i) => s + a * W('output.weight')[v * E + i], 0));
  const max = Math.max(...logits), lse = max + Math.log(logits.reduce((s, v) => s + Math.exp(v - max), 0));
  return ids.map((id) => logits[id] - lse);
}

const files = Object.fromEntries(types.map((type) => [type, llamaModel({ type }).bytes]));
const reference = await llamaCpp(files);
console.log(`prompt ${JSON.stringify(prompt)}; max |ours − llama.cpp| over llama.cpp's top 8 log-probabilities:`);
for (const type of types) {
  const ids = reference[type].map(([id]) => id);
  const diff = (values) => Math.max(...values.map((v, i) => Math.abs(v - reference[type][i][1])));
  console.log(`  ${type}: fromGguf ${diff(await ours(files[type], ids, false)).toExponential(2)}, `
    + `the other rotary pairing ${diff(await ours(files[type], ids, true)).toExponential(2)}`);
}
