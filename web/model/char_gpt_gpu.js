// The char-level GPT of README.md ("Architecture") with everything on the GPU: its embedding,
// LayerNorms, MLPs, residual adds and head are the kernels of gpu_ops.js, its attention the
// package's MultiHeadAttention on WebGPU, each layer on its own KV cache, and a token is one
// GpuStep: recorded once (the package's calls into `out` places, the model's own kernels through
// step.encode()), then replayed, one queue.submit() a token. Only the token's id goes up and its
// logits come back (a copy into a mapped buffer): no activation leaves the GPU between layers.
//
// A prompt (a call of several ids) goes through in chunks of up to PREFILL_ROWS rows, each one
// GpuBatch: the same kernels over the chunk's rows, the attention's calls [1, rows, E] on the
// caches, one submit and one readback a chunk, so that its time grows with the rows' work, not
// with a step's cost per character.
//
// The same interface as CharGpt (char_gpt.js), so generate() runs either. Float32 throughout: the
// logits are within the golden tolerance of PyTorch's float64, not equal to char_gpt.js's
// (tests/webgpu/node_char_gpt_gpu.test.mjs).
import { DisposedError, OptionError } from '../src/base/errors.js';
import { configFrom } from './char_gpt.js';
import { Tokenizer } from './tokenizer.js';
import { modelOps, storageBuffer } from './gpu_ops.js';

const COPY_SRC = 0x4;
const COPY_DST = 0x8;
const MAP_READ = 0x1;
const disposed = () => new DisposedError('forward: the model was disposed', 'model');

/** Rows of a prompt's chunk: the activations' buffers hold this many. */
export const PREFILL_ROWS = 64;

export class CharGptGpu {
  #api;
  #device;
  #blocks;       // [{ attn, cache }]
  #buffers;      // the activations and the token: { token, x, h, attended, hidden, logits, readback }
  #weights;      // the model's own weights' buffers (its attention's are its modules')
  #tokens = new Uint32Array(PREFILL_ROWS);  // the ids written in: a step's one, a chunk's rows
  #ops;          // gpu_ops.js's modelOps() on the device
  #encodes;      // the model's own dispatches between the attention calls: [dispatches] (layers + 1)
  #step = null;  // the GpuStep of one token, once recorded
  #queue = Promise.resolve();  // forward() calls run one after another (one step, one readback buffer)
  #disposed = false;

  /** Use CharGptGpu.load(). */
  constructor(api, config, blocks, device, { buffers, weights, ops, encodes }) {
    this.config = config;
    this.tokenizer = new Tokenizer(config.vocab);
    this.#api = api;
    this.#blocks = blocks;
    this.#device = device;
    this.#buffers = buffers;
    this.#weights = weights;
    this.#ops = ops;
    this.#encodes = encodes;
  }

  /**
   * The model of a char-gpt .safetensors file (bytes) on WebGPU. api: the package
   * ({ MultiHeadAttention, loadSafetensors, GpuStep }); options: { gpu (create()'s: a GPU or a
   * GPUDevice; else the package finds one), weightsDtype, activations, cacheDtype } as CharGpt.load()'s.
   * A prompt's chunks are GpuBatches: `api.GpuBatch` too, where a prompt is given.
   */
  static async load(api, bytes, { gpu, weightsDtype, activations, cacheDtype } = {}) {
    const tensors = api.loadSafetensors(bytes);
    const config = configFrom(tensors.metadata);
    const { embedDim, numHeads, numKvHeads, rotary, window } = config;
    const blocks = [];
    let device = null;  // the first module's: the others compute on it, and the model's buffers live there
    try {
      for (let i = 0; i < config.layers; i++) {
        const attn = await api.MultiHeadAttention.create({ embedDim, numHeads, numKvHeads, rotary, backend: 'webgpu', gpu: device ?? gpu, weightsDtype, activations });
        blocks.push({ attn, cache: null });
        device ??= attn.gpuDevice;
        attn.loadStateDict(tensors, { prefix: `layers.${i}.attn.`, strict: false });
        blocks[i].cache = attn.createCache({ window, dtype: cacheDtype });
      }
    } catch (e) {
      for (const { attn } of blocks) attn.dispose();
      throw e;
    }
    return new CharGptGpu(api, config, blocks, device, modelKernels(device, config, (name) => tensors.get(name).data));
  }

  /** Positions in the caches: the next token's position. */
  get length() {
    return this.#blocks[0].cache.length;
  }

  get backend() {
    return 'webgpu';
  }

  get threads() {
    return 1;
  }

  /** Forgets the text so far (keeps the caches' storage and the recorded step). */
  reset() {
    for (const { cache } of this.#blocks) cache.reset();
  }

  /** Frees the modules and buffers; a forward() under way stops before its next token (DisposedError). */
  dispose() {
    this.#disposed = true;
    this.#step?.dispose();
    for (const { attn } of this.#blocks) attn.dispose();
    for (const buffer of [...Object.values(this.#buffers), ...this.#weights]) buffer.destroy();
  }

  /**
   * Appends the tokens `ids` at positions length … length + n − 1: one id a step, several in
   * chunks of PREFILL_ROWS. Resolves to
   * { logits (Float64Array [n, vocab]), attention: null }; needWeights is an OptionError (the
   * attention's weights stay on the GPU's side of a step). Calls made together run in turn.
   */
  forward(ids, { needWeights = false } = {}) {
    if (needWeights) {
      return Promise.reject(new OptionError('needWeights: the GPU model runs its attention in a GpuStep, which returns no weights; use CharGpt for them', {
        argument: 'needWeights', expected: false, actual: true,
      }));
    }
    try {
      this.tokenizer.checkIds(ids);
    } catch (e) {
      return Promise.reject(e);
    }
    const run = this.#queue.then(() => this.#steps(ids.slice())).catch((e) => {
      throw this.#disposed ? disposed() : e;
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  // forward()'s work: a step for one id, else the chunks of a prompt.
  async #steps(ids) {
    const vocab = this.config.vocab.length;
    const logits = new Float64Array(ids.length * vocab);
    for (let at = 0; at < ids.length; at += PREFILL_ROWS) {
      if (this.#disposed) throw disposed();
      const rows = Math.min(PREFILL_ROWS, ids.length - at);
      for (let r = 0; r < rows; r++) this.#tokens[r] = ids[at + r];  // no array made a token
      this.#device.queue.writeBuffer(this.#buffers.token, 0, this.#tokens, 0, rows);
      if (ids.length > 1) await this.#prefill(rows);
      else if (this.#step) await this.#step.replay();
      else this.#step = await this.#record();
      const { readback } = this.#buffers;
      await readback.mapAsync(MAP_READ, 0, rows * vocab * 4);
      logits.set(new Float32Array(readback.getMappedRange(0, rows * vocab * 4)), at * vocab);
      readback.unmap();
    }
    return { logits, attention: null };
  }

  // A prompt's chunk of `rows` ids (written in): the step's work over its rows, in a GpuBatch.
  async #prefill(rows) {
    const batch = new this.#api.GpuBatch();
    const shape = [1, rows, this.config.embedDim];
    await this.#layers(batch, shape, rows);
    await batch.submit();
  }

  // The first single token: the step's calls recorded and submitted.
  async #record() {
    const step = new this.#api.GpuStep();
    await this.#layers(step, [1, 1, this.config.embedDim], 1);
    await step.submit();
    return step;
  }

  // The model's work over `rows` rows recorded into `batch` (a GpuStep or a GpuBatch): its own
  // kernels and the attention's calls [1, rows, E], then the rows' logits copied out.
  async #layers(batch, shape, rows) {
    const { h, attended, logits, readback } = this.#buffers;
    const input = { gpuBuffer: h, shape, dtype: 'float32' };
    const out = { gpuBuffer: attended, shape, dtype: 'float32' };
    const encode = (dispatches) => batch.encode(this.#device, (encoder) => this.#ops.run(encoder, dispatches, rows));
    encode(this.#encodes[0]);
    for (const [i, { attn, cache }] of this.#blocks.entries()) {
      await attn.forward(input, input, input, { cache, output: 'gpu-buffer', out, batch });
      encode(this.#encodes[i + 1]);
    }
    const bytes = rows * this.config.vocab.length * 4;
    batch.encode(this.#device, (encoder) => encoder.copyBufferToBuffer(logits, 0, readback, 0, bytes));
  }
}

// The model's buffers and its own dispatches around the attention calls: before layer 0 the
// embedding and LN1; after layer i the residual add, LN2, the MLP (fc2 adds into the residual),
// then layer i + 1's LN1, or after the last the final LayerNorm and the head.
function modelKernels(device, config, tensor) {
  const { embedDim: width, eps, layers } = config;
  const vocab = config.vocab.length;
  const ops = modelOps(device);
  const weights = new Map();
  const weight = (name) => {
    if (!weights.has(name)) weights.set(name, storageBuffer(device, tensor(name)));
    return weights.get(name);
  };
  const hiddenWidth = tensor('layers.0.mlp.fc1.bias').length;
  const rows = PREFILL_ROWS;
  const buffers = {
    token: storageBuffer(device, rows, COPY_DST),
    x: storageBuffer(device, rows * width),
    h: storageBuffer(device, rows * width, COPY_SRC | COPY_DST),
    attended: storageBuffer(device, rows * width, COPY_SRC | COPY_DST),
    hidden: storageBuffer(device, rows * hiddenWidth),
    logits: storageBuffer(device, rows * vocab, COPY_SRC),
    readback: device.createBuffer({ size: rows * vocab * 4, usage: MAP_READ | COPY_DST }),
  };
  const { token, x, h, attended, hidden, logits } = buffers;
  const norm = (name, to) => ops.prepare('layerNorm', { width, eps }, [x, weight(`${name}.weight`), weight(`${name}.bias`), to]);
  const linear = (name, from, to, inWidth, outWidth, flags) =>
    ops.prepare('linear', { inWidth, outWidth, ...flags }, [from, weight(`${name}.weight`), weight(`${name}.bias`), to]);
  const encodes = [[ops.prepare('embed', { width }, [token, weight('tok_emb.weight'), x]), norm('layers.0.ln1', h)]];
  for (let i = 0; i < layers; i++) {
    const mlp = `layers.${i}.mlp`;
    encodes.push([
      ops.prepare('add', { width }, [attended, x]),
      norm(`layers.${i}.ln2`, h),
      linear(`${mlp}.fc1`, h, hidden, width, hiddenWidth, { gelu: true }),
      linear(`${mlp}.fc2`, hidden, x, hiddenWidth, width, { add: true }),
      i + 1 < layers ? norm(`layers.${i + 1}.ln1`, h) : norm('ln_f', h),
      ...(i + 1 < layers ? [] : [linear('head', h, logits, width, vocab, {})]),
    ]);
  }
  return { buffers, weights: [...weights.values()], ops, encodes };
}
