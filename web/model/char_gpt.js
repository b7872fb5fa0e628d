// The char-level GPT of README.md ("Architecture") in JS: token embedding, pre-LayerNorm blocks
// (the package's MultiHeadAttention with its own sliding-window KV cache, then a GELU MLP), final
// LayerNorm and head. forward() appends positions to the caches: the prompt in one call, then
// one token per call, so that a step costs one row of work however long the text is.
//
// The package is passed in ({ MultiHeadAttention, loadSafetensors }) so that the same model runs
// in Node (web/src/node.js) and in the page (web/src/browser.js).
import { StateDictError } from '../src/base/errors.js';
import { addInPlace, gelu, layerNorm, linear } from './tensor_ops.js';
import { Tokenizer } from './tokenizer.js';

/** The sizes the safetensors metadata declares (scripts/model writes them as strings). */
export function configFrom(metadata) {
  if (metadata.get('format') !== 'char-gpt') {
    throw new StateDictError(`metadata format: expected 'char-gpt', got ${JSON.stringify(metadata.get('format'))}`, {
      argument: 'metadata.format', expected: 'char-gpt', actual: metadata.get('format'),
    });
  }
  const number = (key) => {
    const value = Number(metadata.get(key));
    if (!Number.isFinite(value)) {
      throw new StateDictError(`metadata ${key}: expected a number, got ${JSON.stringify(metadata.get(key))}`, {
        argument: `metadata.${key}`, expected: 'a number', actual: metadata.get(key),
      });
    }
    return value;
  };
  return {
    vocab: metadata.get('vocab'),
    layers: number('n_layer'),
    embedDim: number('d_model'),
    numHeads: number('n_head'),
    numKvHeads: number('n_kv_head'),
    window: number('window'),
    rotary: { base: number('rope_base'), dim: number('rotary_dim'), interleaved: metadata.get('rotary_interleaved') === 'true' },
    eps: number('ln_eps'),
  };
}

export class CharGpt {
  #tensors;
  #wide = new Map();
  #blocks;

  /** Use CharGpt.load(). */
  constructor(config, tensors, blocks) {
    this.config = config;
    this.tokenizer = new Tokenizer(config.vocab);
    this.#tensors = tensors;
    this.#blocks = blocks;
  }

  /**
   * The model of a char-gpt .safetensors file (bytes). options: the attention modules' create()
   * options { threads, backend, gpu, weightsDtype, activations } (every backend runs its GQA and rotary attention,
   * WebGPU too) and cacheDtype, their caches' createCache({ dtype }) (default float32 each).
   */
  static async load({ MultiHeadAttention, loadSafetensors }, bytes, { threads, backend, gpu, weightsDtype, activations, cacheDtype } = {}) {
    const tensors = loadSafetensors(bytes);
    // The file is F16: float16 modules take its 16-bit bits as they are (no f32 copy on the
    // way); every other dtype rounds or quantises from the exactly widened f32 values.
    const attnTensors = weightsDtype === 'float16' ? loadSafetensors(bytes, { convert: false }) : tensors;
    const config = configFrom(tensors.metadata);
    const { embedDim, numHeads, numKvHeads, rotary, window } = config;
    const blocks = [];
    try {
      for (let i = 0; i < config.layers; i++) {
        const attn = await MultiHeadAttention.create({ embedDim, numHeads, numKvHeads, rotary, threads, backend, gpu, weightsDtype, activations });
        blocks.push({ attn, cache: null });
        attn.loadStateDict(attnTensors, { prefix: `layers.${i}.attn.`, strict: false });
        blocks[i].cache = attn.createCache({ window, dtype: cacheDtype });
      }
    } catch (e) {
      for (const { attn } of blocks) attn.dispose();
      throw e;
    }
    return new CharGpt(config, tensors, blocks);
  }

  /** Positions in the caches: the next token's position. */
  get length() {
    return this.#blocks[0].cache.length;
  }

  /** Where attention ran: 'wasm' or 'webgpu' (mha.backend), and on how many threads. */
  get backend() {
    return this.#blocks[0].attn.backend;
  }

  get threads() {
    return this.#blocks[0].attn.threads;
  }

  /** Forgets the text so far (keeps the caches' storage). */
  reset() {
    for (const { cache } of this.#blocks) cache.reset();
  }

  dispose() {
    for (const { attn } of this.#blocks) attn.dispose();
  }

  /** The file's tensor `name` widened to float64 (once): float64 reads make linear() faster. */
  #tensor(name) {
    let t = this.#wide.get(name);
    if (!t) {
      const stored = this.#tensors.get(name);
      if (!stored) throw new StateDictError(`${name}: missing from the model file`, { argument: name, expected: 'a tensor', actual: 'missing' });
      t = { data: Float64Array.from(stored.data), shape: stored.shape };
      this.#wide.set(name, t);
    }
    return t;
  }

  #norm(name) {
    return { weight: this.#tensor(`${name}.weight`), bias: this.#tensor(`${name}.bias`) };
  }

  #linear(x, rows, name) {
    return linear(x, rows, this.#tensor(`${name}.weight`), this.#tensor(`${name}.bias`));
  }

  /**
   * Appends the tokens `ids` at positions length … length + n − 1. Resolves to { logits
   * (Float64Array [n, vocab]), attention: null, or with needWeights per layer the weights
   * { data, shape: [1, heads, n, T] } over all T positions so far (zero outside the window) }.
   */
  async forward(ids, { needWeights = false } = {}) {
    const { embedDim: d, eps } = this.config;
    const n = this.tokenizer.checkIds(ids).length;
    const embedding = this.#tensor('tok_emb.weight').data;
    const x = new Float64Array(n * d);
    ids.forEach((id, r) => x.set(embedding.subarray(id * d, (id + 1) * d), r * d));
    const attention = needWeights ? [] : null;
    for (const [i, { attn, cache }] of this.#blocks.entries()) {
      const h = { data: Float32Array.from(layerNorm(x, n, this.#norm(`layers.${i}.ln1`), eps)), shape: [1, n, d] };
      const { output, attnWeights } = await attn.forward(h, h, h, { cache, needWeights, averageAttnWeights: false });
      addInPlace(x, output.data);
      attention?.push(attnWeights);
      const hidden = gelu(this.#linear(layerNorm(x, n, this.#norm(`layers.${i}.ln2`), eps), n, `layers.${i}.mlp.fc1`));
      addInPlace(x, this.#linear(hidden, n, `layers.${i}.mlp.fc2`));
    }
    const logits = this.#linear(layerNorm(x, n, this.#norm('ln_f'), eps), n, 'head');
    return { logits, attention };
  }
}
