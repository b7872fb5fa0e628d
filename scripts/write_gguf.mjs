// A small llama model as a GGUF file in llama.cpp's own layout: the names, shapes and metadata
// its convert_hf_to_gguf.py writes for the llama architecture, its Q/K row permutation (each
// head's rows reordered for llama.cpp's rotary pairs of adjacent dims), and its Q8_0 / Q4_0 block
// rules (quantize_row_q8_0_ref / q4_0_ref, as tests/fixtures/make_gguf.mjs writes them), with a
// byte-level BPE vocabulary that llama.cpp's loader takes ('gpt2' model, 'gpt-2' pre-tokenizer,
// ASCII tokens, no merges; vocabularyTokens()). Random weights from a seed: what MultiHeadAttention.fromGguf()'s
// test loads against a float64 reference, and what the llama.cpp (wllama) benchmark runs, so the
// feed-forward and the vocabulary are small beside attention.
//   node scripts/write_gguf.mjs out.gguf [--type F32|F16|Q8_0|Q4_0] [--embed 64] [--heads 4]
//     [--kv-heads 2] [--layers 2] [--ffn 64] [--vocab 256] [--context 4096] [--rope-base 10000] [--seed 1]
import { writeFileSync } from 'node:fs';
import { ggufBytes, halfValue, quantizeQ4_0, quantizeQ8_0, rng } from '../tests/fixtures/make_gguf.mjs';
import { f32BitsToF16 } from '../web/src/storage/half_floats.js';

/** The tensor types written, with general.file_type's value for a file of them (llama.cpp's llama_ftype). */
export const GGUF_WEIGHT_TYPES = { F32: 0, F16: 1, Q4_0: 2, Q8_0: 7 };

export const DEFAULTS = { type: 'F32', embed: 64, heads: 4, kvHeads: 2, layers: 2, ffn: 64, vocab: 256, context: 4096, ropeBase: 10000, seed: 1 };

/**
 * llama.cpp's convert_hf_to_gguf.py permutation of a Q or K weight [heads · d, in] (Hugging Face
 * row order): within each head, row 2i takes row i and row 2i + 1 takes row i + d/2, so that
 * llama.cpp's rotary pairs of adjacent dims turn what Hugging Face's rotate_half pairs turn.
 */
export function permuteRows(w, heads, cols) {
  const rows = w.length / cols, d = rows / heads, out = new w.constructor(w.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < d; i++) {
      const from = h * d + (i % 2 ? d / 2 + (i >> 1) : i >> 1);
      out.set(w.subarray(from * cols, (from + 1) * cols), (h * d + i) * cols);
    }
  }
  return out;
}

/**
 * `n` tokens of a byte-level BPE vocabulary (GPT-2's: byte b written as one printable character,
 * its bytes_to_unicode), each of which decodes to ASCII: the 128 ASCII bytes, then pairs of
 * printable ASCII characters ('!!', '!"', ...). Any token a random model samples is then valid
 * UTF-8 on its own (a lone byte >= 0x80 is not, and llama.cpp's server JSON refuses it), and every
 * ASCII prompt tokenizes (byte by byte: there are no merges).
 */
export function vocabularyTokens(n) {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let next = 256;
  const byteChar = Array.from({ length: 256 }, (_, b) => String.fromCodePoint(printable(b) ? b : next++));
  const ascii = Array.from({ length: 94 }, (_, i) => byteChar[0x21 + i]);
  return Array.from({ length: n }, (_, i) => (i < 128 ? byteChar[i] : ascii[Math.floor((i - 128) / 94) % 94] + ascii[(i - 128) % 94]));
}

const f16Bits = (x) => f32BitsToF16(new Uint32Array(new Float32Array([x]).buffer)[0]);

/** x (float64 values of a [rows, cols] tensor) stored as `type`: { data: bytes, values (float64, as stored) }. */
function stored(type, x) {
  if (type === 'Q8_0') return quantizeQ8_0(x);
  if (type === 'Q4_0') return quantizeQ4_0(x);
  if (type === 'F16') {
    const bits = Uint16Array.from(x, f16Bits);
    return { data: new Uint8Array(bits.buffer), values: Float64Array.from(bits, halfValue) };
  }
  const f = Float32Array.from(x);
  return { data: new Uint8Array(f.buffer), values: Float64Array.from(f) };
}

/**
 * The model's bytes and, per layer, its attention weights as stored (dequantised, float64) in
 * Hugging Face's row order ({ q, k, v, out }: [out, in] row-major). options: DEFAULTS' fields.
 */
export function llamaModel(options = {}) {
  const o = { ...DEFAULTS, ...options };
  if (!(o.type in GGUF_WEIGHT_TYPES)) throw new Error(`--type: expected one of ${Object.keys(GGUF_WEIGHT_TYPES).join(', ')}, got ${o.type}`);
  const { embed: E, heads: H, kvHeads: G, ffn, vocab } = o;
  const d = E / H;
  if (!Number.isInteger(d) || d % 2 || H % G || E % 32 || ffn % 32) throw new Error('expected heads | embed, an even head dim, kv-heads | heads, embed and ffn multiples of 32');
  if (!(vocab >= 1 && vocab <= 128 + 94 * 94)) throw new Error(`--vocab: expected 1 to ${128 + 94 * 94} (distinct ASCII tokens), got ${vocab}`);
  const next = rng(o.seed);
  const random = (n, scale) => Float64Array.from({ length: n }, () => (next() - 0.5) * 2 * scale);
  const tensors = [];
  const add = (name, shape, x, type = o.type) => {
    const s = stored(type, x);
    tensors.push({ name, ne: [...shape].reverse(), type, data: s.data });
    return s.values;
  };
  const ones = (n) => Float64Array.from({ length: n }, () => 1 + (next() - 0.5) * 0.2);
  add('token_embd.weight', [vocab, E], random(vocab * E, 1));
  const layers = [];
  for (let l = 0; l < o.layers; l++) {
    const p = `blk.${l}.`, scale = 1 / Math.sqrt(E);
    add(`${p}attn_norm.weight`, [E], ones(E), 'F32');
    // Written in llama.cpp's row order; read back in Hugging Face's for the reference.
    const q = add(`${p}attn_q.weight`, [H * d, E], permuteRows(random(H * d * E, scale), H, E));
    const k = add(`${p}attn_k.weight`, [G * d, E], permuteRows(random(G * d * E, scale), G, E));
    const v = add(`${p}attn_v.weight`, [G * d, E], random(G * d * E, scale));
    const out = add(`${p}attn_output.weight`, [E, H * d], random(E * H * d, scale));
    layers.push({ q: unpermuteRows(q, H, E), k: unpermuteRows(k, G, E), v, out });
    add(`${p}ffn_norm.weight`, [E], ones(E), 'F32');
    add(`${p}ffn_gate.weight`, [ffn, E], random(ffn * E, scale));
    add(`${p}ffn_up.weight`, [ffn, E], random(ffn * E, scale));
    add(`${p}ffn_down.weight`, [E, ffn], random(E * ffn, 1 / Math.sqrt(ffn)));
  }
  add('output_norm.weight', [E], ones(E), 'F32');
  add('output.weight', [vocab, E], random(vocab * E, 1 / Math.sqrt(E)));
  return { bytes: ggufBytes({ metadata: metadata(o), tensors }), layers, options: o };
}

/** permuteRows() undone: llama.cpp's row order back to Hugging Face's. */
export function unpermuteRows(w, heads, cols) {
  const rows = w.length / cols, d = rows / heads, out = new w.constructor(w.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < d; i++) {
      const to = h * d + (i % 2 ? d / 2 + (i >> 1) : i >> 1);
      out.set(w.subarray((h * d + i) * cols, (h * d + i + 1) * cols), to * cols);
    }
  }
  return out;
}

/** The key-value pairs llama.cpp's llama loader reads (and its vocabulary's). */
function metadata(o) {
  const tokens = vocabularyTokens(o.vocab);
  return [
    ['general.architecture', 'STRING', 'llama'],
    ['general.name', 'STRING', `webattention llama E${o.embed} h${o.heads}/${o.kvHeads} x${o.layers} ${o.type}`],
    ['general.file_type', 'UINT32', GGUF_WEIGHT_TYPES[o.type]],
    ['llama.context_length', 'UINT32', o.context],
    ['llama.embedding_length', 'UINT32', o.embed],
    ['llama.block_count', 'UINT32', o.layers],
    ['llama.feed_forward_length', 'UINT32', o.ffn],
    ['llama.attention.head_count', 'UINT32', o.heads],
    ['llama.attention.head_count_kv', 'UINT32', o.kvHeads],
    ['llama.rope.dimension_count', 'UINT32', o.embed / o.heads],
    ['llama.rope.freq_base', 'FLOAT32', o.ropeBase],
    ['llama.attention.layer_norm_rms_epsilon', 'FLOAT32', 1e-5],
    ['llama.vocab_size', 'UINT32', o.vocab],
    ['tokenizer.ggml.model', 'STRING', 'gpt2'],
    ['tokenizer.ggml.pre', 'STRING', 'gpt-2'],
    ['tokenizer.ggml.tokens', 'ARRAY', { type: 'STRING', values: tokens }],
    ['tokenizer.ggml.token_type', 'ARRAY', { type: 'INT32', values: tokens.map(() => 1) }],
    ['tokenizer.ggml.merges', 'ARRAY', { type: 'STRING', values: [] }],
    ['tokenizer.ggml.bos_token_id', 'UINT32', 0],
    ['tokenizer.ggml.eos_token_id', 'UINT32', 0],
    ['tokenizer.ggml.add_bos_token', 'BOOL', false],
  ];
}

// Command line: the output path, then --name value pairs (DEFAULTS' names, kebab-case).
if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const [out, ...rest] = process.argv.slice(2);
  if (!out || out.startsWith('--')) {
    console.error('usage: node scripts/write_gguf.mjs out.gguf [--type F32|F16|Q8_0|Q4_0] [--embed 64] [--heads 4] [--kv-heads 2] [--layers 2] [--ffn 64] [--vocab 256] [--context 4096] [--rope-base 10000] [--seed 1]');
    process.exit(2);
  }
  const options = {};
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i].replace(/^--/, '').replace(/-(\w)/g, (_, c) => c.toUpperCase());
    if (!(key in DEFAULTS) || rest[i + 1] === undefined) throw new Error(`unknown option or missing value: ${rest[i]}`);
    options[key] = key === 'type' ? rest[i + 1] : Number(rest[i + 1]);
  }
  const { bytes, options: o } = llamaModel(options);
  writeFileSync(out, bytes);
  console.log(`wrote ${out}: ${bytes.length} bytes, llama E ${o.embed}, heads ${o.heads}/${o.kvHeads}, ${o.layers} layers, ffn ${o.ffn}, vocab ${o.vocab}, ${o.type}`);
}
