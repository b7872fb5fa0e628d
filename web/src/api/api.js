// The public API, independent of how the WASM core is loaded and how workers are made: node.js
// and browser.js each call bindApi() with their loader and platform (it makes the package's
// Runtime, runtime.js) and export what it returns. create() resolves the module's config
// (module_config.js) and makes its executors (create_executors.js); every call is
// checked into a plan (plans.js) before any executor sees it; MultiHeadAttention.forward() then
// goes through its Dispatcher (dispatch.js), which picks the executor (calling thread, worker
// pool or GPU).
import { Dispatcher } from '../dispatch/dispatch.js';
import { outputTensor } from '../checks/half_tensors.js';
import { DisposedError } from '../base/errors.js';
import { BATCH } from '../base/batch_protocol.js';
import { createExecutors } from './create_executors.js';
import { wasmSdpa } from '../wasm/wasm_sdpa.js';
import { resolveCacheOptions } from '../dispatch/cache_checks.js';
import { PLACEMENT_OPTIONS, resolveMhaConfig } from '../checks/module_config.js';
import { measuredSpeedups } from '../wasm/madd_probe.js';
import { checkIndex, checkOptions } from '../base/option_checks.js';
import { resolveMhaForward, resolveSdpa, resolveSelfAttention } from '../checks/plans.js';
import { lazyModules } from '../base/lazy_modules.js';
import { Runtime } from './runtime.js';
import { AttentionEngines } from './attention_engines.js';
import { offsetQkNorm, resolveModuleStateDict } from '../storage/state_dict.js';
import { moduleEntry } from '../wasm/variant.js';
import { warnOnce } from '../base/warn_once.js';

/** @type {Runtime | null} */
let runtime = null;
let engines = null;  // AttentionEngines: scaledDotProductAttention() off the default WASM path

const tensor = (data, shape) => ({ data, shape });

// Safety net for modules the app forgot to dispose(): frees their WASM memory on collection.
const registry = new FinalizationRegistry((dispatcher) => dispatcher.dispose());

export class MultiHeadAttention {
  #dispatcher;
  #config;
  #checkpoint;

  /** Use MultiHeadAttention.create(options) or fromConfig(config, { layer }). */
  constructor(dispatcher, config, checkpoint = null) {
    this.#dispatcher = dispatcher;
    this.#config = config;
    this.#checkpoint = checkpoint;
    registry.register(this, dispatcher, this);
  }

  /**
   * options: { embedDim, numHeads, kdim?, vdim?, bias? = true (or { q, k, v, out }), headDim?,
   * valueHeadDim?, numKvHeads?, rotary?, scale?, softcap?, sinks?, threads? = 'auto', backend? = 'auto', gpu?, webgpuMinFlops?
   * (docs/webgpu.md) }: module_config.js's CREATE_OPTIONS. Weights are zero until loadStateDict().
   */
  static async create(options) {
    const config = resolveMhaConfig(options);
    const dispatcher = new Dispatcher(config, await createExecutors(config, options, runtime));
    return new MultiHeadAttention(dispatcher, config);
  }

  /**
   * Layer `layer` of a Hugging Face config.json (hf_config.js; docs/checkpoints.md): created with
   * that layer's options. options: { layer, prefix?, rotary? (replaces the config's RoPE: a
   * { table } for scalings fromConfig does not compute), weightsDtype?, activations?, threads?, backend?, gpu?,
   * webgpuMinFlops? }. The module's `checkpoint` keeps the layout, prefix, window and causality;
   * its loadStateDict() takes that layout and prefix unless told otherwise, and adds
   * qkNormWeightOffset to the q/k norm weights (Gemma 3's are stored as w − 1).
   */
  static async fromConfig(config, options) {
    const { FROM_CONFIG_OPTIONS, attentionOptionsFromConfig } = await runtime.loadCheckpointMappings();
    const own = ['weightsDtype', 'activations', ...PLACEMENT_OPTIONS];
    const o = checkOptions('MultiHeadAttention.fromConfig', options, [...FROM_CONFIG_OPTIONS, ...own]);
    const mapped = attentionOptionsFromConfig(config, Object.fromEntries(FROM_CONFIG_OPTIONS.filter((k) => k in o).map((k) => [k, o[k]])));
    const createOptions = { ...mapped.options, ...Object.fromEntries(own.filter((k) => k in o).map((k) => [k, o[k]])) };
    const resolved = resolveMhaConfig(createOptions);
    const dispatcher = new Dispatcher(resolved, await createExecutors(resolved, createOptions, runtime));
    const { modelType, layer, window, causal, load, qkNormWeightOffset } = mapped;
    return new MultiHeadAttention(dispatcher, resolved, Object.freeze({ modelType, layer, window, causal, ...load, qkNormWeightOffset }));
  }

  /**
   * Layer `layer` of a GGUF file (loadGguf()'s GgufFile; checks/gguf_config.js): created with the
   * options its metadata and tensors imply (sizes, RoPE with the pairing of its stored Q/K rows,
   * biases and qk-norm where the layer has them, the weightsDtype that keeps its tensors as
   * stored), then loaded from it (layout 'gguf', prefix 'blk.N.'). options: { layer,
   * weightsDtype? (replaces the tensors'), threads?, backend?, gpu?, webgpuMinFlops? }.
   */
  static async fromGguf(file, options) {
    const { FROM_GGUF_OPTIONS, attentionOptionsFromGguf } = await runtime.loadCheckpointMappings();
    const own = ['weightsDtype', ...PLACEMENT_OPTIONS];
    const o = checkOptions('MultiHeadAttention.fromGguf', options, [...FROM_GGUF_OPTIONS, ...own]);
    const mapped = attentionOptionsFromGguf(file, { layer: o.layer }, o.weightsDtype);
    const createOptions = { ...mapped.options, ...Object.fromEntries(PLACEMENT_OPTIONS.filter((k) => k in o).map((k) => [k, o[k]])) };
    const resolved = resolveMhaConfig(createOptions);
    const dispatcher = new Dispatcher(resolved, await createExecutors(resolved, createOptions, runtime));
    const { modelType, layer, causal, load } = mapped;
    const mha = new MultiHeadAttention(dispatcher, resolved, Object.freeze({ modelType, layer, window: null, causal, ...load, qkNormWeightOffset: 0 }));
    try {
      mha.loadStateDict(file);
    } catch (e) {
      mha.dispose();
      throw e;
    }
    return mha;
  }

  /**
   * Where a fromConfig() or fromGguf() module came from: { modelType, layer, window (createCache()'s, or null),
   * causal, layout, prefix, qkNormWeightOffset }; null for a create()d module.
   */
  get checkpoint() {
    return this.#checkpoint;
  }

  /** Resolved configuration (defaults filled in). */
  get config() {
    return { ...this.#config };
  }

  /**
   * 'webgpu' (with backend 'auto', calls under webgpuMinFlops still run on WASM) or 'wasm'
   * (backend 'wasm'; 'auto' before its first large call or without a usable GPU; after the
   * WebGPU device was lost, except in a hostWeights: false module, which has no WASM copy).
   */
  get backend() {
    return this.#live('backend').backend;
  }

  /** Threads forward() computes on (1: the calling thread only, as after a worker failure). */
  get threads() {
    return this.#live('threads').threads;
  }

  /** The state-dict entries this module expects: [{ name, shape }], PyTorch's order. */
  get stateDictShapes() {
    return this.#live('stateDictShapes').parameterSpecs();
  }

  /**
   * Loads torch.nn.MultiheadAttention.state_dict() entries (tensors or Float32Arrays; a Map from
   * loadSafetensors() too). options: { prefix? = '', strict? = true, layout? = 'torch' } (a fromConfig()
   * module's: its checkpoint's prefix and layout) (state_dict.js;
   * the 'hf', 'gpt2' and 'bert' namings: checkpoint_layouts.js).
   */
  loadStateDict(stateDict, options) {
    const dispatcher = this.#live('loadStateDict');
    // A fromConfig() module's naming is its checkpoint's unless the call says otherwise.
    const named = this.#checkpoint && (options === undefined || options === null || typeof options === 'object')
      ? { layout: this.#checkpoint.layout, prefix: this.#checkpoint.prefix, ...options } : options;
    const entries = resolveModuleStateDict(dispatcher.parameterSpecs(), stateDict, named, this.#config.weightsDtype);
    dispatcher.loadStateDict(offsetQkNorm(entries, this.#checkpoint?.qkNormWeightOffset));
  }

  /**
   * Storage for incremental decoding (options { batchSize = 1, maxLength, window }), allocated
   * once: pass it as forward()'s `cache` option. Freed by its dispose() or the module's.
   */
  createCache(options) {
    const dispatcher = this.#live('createCache');
    return dispatcher.createCache(resolveCacheOptions(options));
  }

  /**
   * Cross-attention (docs/attention-math/decoding.md §9): an encoder's output key [B, S, kdim] (or [S,
   * kdim]) and value [B, S, vdim] projected once into a read-only KvCache (options { dtype }),
   * which forward(query, null, null, { cache }) then attends to at every decoder step.
   */
  async encode(key, value, options) {
    const dispatcher = this.#live('encode');
    return dispatcher.encode(lazyModules().resolveEncode(this.#config, key, value, options));
  }

  /**
   * query [B, L, E] (or [L, E]), key [B, S, kdim], value [B, S, vdim].
   * Resolves to { output [B, L, E], attnWeights: [B, L, S] | [B, h, L, S] | null }. With
   * { cache }: S = L new positions appended to it, attention over all T cached positions
   * (causal, bottom-right), weights [B, (h,) L, T].
   */
  async forward(query, key, value, options) {
    const dispatcher = this.#live('forward');
    const plan = resolveMhaForward(this.#config, query, key, value, options);
    plan.batch?.[BATCH.hold](this);  // not collected (and disposed) while the batch holds its work
    const ran = dispatcher.forward(plan);  // a promise unless it ran now
    return results(ran instanceof Promise ? await ran : ran, plan);
  }

  /**
   * docs/attention-math/heads.md §5: head `head`'s score matrix W_i = W_i^Q W_i^Kᵀ ([embedDim, kdim],
   * so that the head's scores are x W_i yᵀ / √d_k without biases), its singular values (a
   * Float64Array, largest first) and rank (<= headDim), and the parameter counts of the factored
   * and the full form.
   */
  headBilinearForm(head) {
    const dispatcher = this.#live('headBilinearForm');
    const h = checkIndex('head', head, this.#config.numHeads);
    const { matrix, shape, rank, singularValues, factoredParameters, fullParameters } = dispatcher.headBilinearForm(h);
    return { matrix: tensor(matrix, shape), rank, singularValues, factoredParameters, fullParameters };
  }

  /**
   * What the WebGPU kernel selection measured and chose on this module's device
   * (docs/webgpu.md), or null while the module has no GPU: { adapter, measuring, timer, defaults,
   * pinned, classes: [{ family, shapeClass, chosen, medianMs, runs }] }.
   */
  gpuProfile() {
    return this.#live('gpuProfile').gpuProfile();
  }

  /**
   * The GPUDevice this module computes on, where GPU-resident tensors' buffers must be (docs/webgpu.md),
   * or null while it has none ('wasm'; 'auto' before its first GPU call; after a device loss).
   */
  get gpuDevice() {
    return this.#live('gpuDevice').gpuDevice;
  }

  /** Frees the module's WASM memory. Later calls throw DisposedError. */
  dispose() {
    if (!this.#dispatcher) return;
    registry.unregister(this);
    this.#dispatcher.dispose();
    this.#dispatcher = null;
  }

  #live(method) {
    if (!this.#dispatcher) {
      throw new DisposedError(`MultiHeadAttention.${method}: the module was disposed`);
    }
    return this.#dispatcher;
  }
}

/**
 * softmax(q kᵀ · scale + attnMask) v over [..., L, dk], [..., S, dk], [..., S, dv].
 * options: { attnMask?, isCausal?, scale? = 1/√dk, needWeights?, out?, backend? ('wasm' by default,
 * 'webgpu' with GPU tensors or output 'gpu-buffer'; 'auto'), gpu?, webgpuMinFlops?, output? }:
 * q, k, v may be GPU tensors (docs/webgpu.md). Resolves to { output [..., L, dv], attnWeights
 * [..., L, S] | null }: GpuTensors with output 'gpu-buffer'.
 */
export async function scaledDotProductAttention(q, k, v, options) {
  // The plan holds copies of the inputs, taken here before the await (tensor_checks.js): what the
  // caller does with its arrays while the core loads cannot reach the call.
  return runSdpa(resolveSdpa(q, k, v, options));
}

// A scaledDotProductAttention() plan run: on the calling thread's core, or (another backend, GPU
// tensors or 'gpu-buffer' results) routed as a module's calls are (attention_engines.js).
async function runSdpa(plan) {
  if (plan.backendOptions.backend !== 'wasm') return results(await engines.forward(plan), plan);
  return results(wasmSdpa(await runtime.core(), plan), plan);
}

/** A call's { output, attnWeights } tensors, 16-bit when its inputs were (half_tensors.js). */
function results({ output, weights }, plan) {
  // output: 'gpu-buffer': GpuTensors (webgpu/gpu_tensor.js), float16 for float16 inputs, else float32.
  if (plan.output === 'gpu-buffer') return { output, attnWeights: weights ?? null };
  return {
    output: outputTensor(output, plan.outputShape, plan.dtype, plan.out),
    attnWeights: weights ? outputTensor(weights, plan.weightsShape, plan.dtype) : null,
  };
}

/**
 * Plain self-attention softmax(X Xᵀ / √C) X (Q = K = V = X). options: { needWeights?, and
 * scaledDotProductAttention()'s backend options }. Resolves to { output, attnWeights (only with needWeights) }.
 */
export async function selfAttention(x, options) {
  const { plan, deprecatedReturnWeights } = resolveSelfAttention(x, options);
  if (deprecatedReturnWeights) {
    warnOnce('returnWeights', 'webattention: selfAttention({ returnWeights }) is deprecated; say needWeights, as every other call does');
  }
  return runSdpa(plan);
}

/** Bytes in use on the WASM heap: flat across calls when nothing leaks. */
export async function wasmMemoryInUse() {
  return (await runtime.core()).memoryInUse();
}

/** Size of the WASM heap in bytes: it only grows, so it is the high-water mark of all calls. */
export async function wasmHeapBytes() {
  return (await runtime.core()).HEAPU8.length;
}

/**
 * What this engine runs: { backend: 'wasm', simd, wasmModule: 'simd' | 'relaxed' | 'scalar' |
 * 'mt' | 'mt-relaxed', threads, relaxedSimdSpeedup, relaxedDotSpeedup } (threads: what a module
 * created without the `threads` option uses at most; relaxedSimdSpeedup: how much faster relaxed
 * SIMD's fused multiply-add ran the projection's register block than mul + add when the module
 * was picked, relaxedDotSpeedup: its dot product the int4 × int8 step than the SIMD128 form; each
 * null where that was not measured: variant.js chooseVariant).
 */
export async function capabilities() {
  const { variant, core } = await runtime.load();
  const threads = moduleEntry(variant).threads ? core.threadCount() : runtime.threads(undefined).threads;
  const speedups = measuredSpeedups();
  return {
    backend: 'wasm', simd: variant !== 'scalar', wasmModule: variant, threads,
    relaxedSimdSpeedup: speedups?.fused ?? null, relaxedDotSpeedup: speedups?.dot ?? null,
  };
}

/** Resolves once the core is loaded, without handing out its internals. */
export async function ready() {
  await runtime.core();
}

/**
 * Called once by the entry file: loadCore and platform as Runtime takes them. Returns the public
 * API (the same functions and class this file exports).
 */
export function bindApi(loadCore, platform) {
  runtime = new Runtime(loadCore, platform);
  engines = new AttentionEngines(runtime);
  if (platform.preload) runtime.preload();
  return { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready };
}
