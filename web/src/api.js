// The public API, independent of how the WASM core is loaded and how workers are made (node.js
// and browser.js each pass their loader and platform to bindApi()).
import { DisposedError } from './errors.js';
import { PooledMha, WorkerPool } from './pool.js';
import { checkIndex, resolveMhaConfig, resolveMhaForward, resolveSdpa, resolveSelfAttention, resolveStateDict, resolveThreads } from './shapes.js';
import { THREADS_VARIANTS } from './variant.js';
import { WasmMha, wasmSdpa } from './wasm_backend.js';
import * as webgpu from './webgpu/options.js';

const tensor = (data, shape) => ({ data, shape });

/**
 * loadCore() resolves to { core, variant: 'simd' | 'relaxed' | 'scalar' | 'mt' | 'mt-relaxed', module }.
 * platform: { autoThreads: number ('auto'; 1 where workers cannot run), defaultThreads() (the
 * `threads` option's default: 'auto' unless overridden), spawnWorker(variant) (pool.js) }.
 */
export function bindApi(loadCore, platform) {
  let loaded = null;
  const load = () => {
    loaded ??= loadCore().catch((e) => {
      loaded = null;  // a failed load may be retried
      throw e;
    });
    return loaded;
  };
  /** Loads (once) and returns the WASM core. */
  const getCore = async () => (await load()).core;

  // The worker pool every module with threads > 1 shares; a new one once it has stopped.
  let pool = null;
  const getPool = ({ module, variant }) => {
    if (!pool || pool.closed) pool = new WorkerPool({ spawnWorker: platform.spawnWorker, module, variant });
    return pool;
  };

  // Safety net for modules the app forgot to dispose(): frees their WASM memory on collection.
  const registry = new FinalizationRegistry((backend) => backend.dispose());

  class MultiHeadAttention {
    #backend;
    #config;

    /** Use MultiHeadAttention.create(options). */
    constructor(backend, config) {
      this.#backend = backend;
      this.#config = config;
      registry.register(this, backend, this);
    }

    /**
     * options: { embedDim, numHeads, kdim?, vdim?, bias? = true, headDim?, valueHeadDim?,
     * threads? = 'auto', backend? = 'auto', gpu?, webgpuMinFlops? (docs/webgpu.md) }. Weights are
     * zero until loadStateDict().
     */
    static async create(options) {
      const config = resolveMhaConfig(options);
      const { threads, auto } = options.threads === undefined
        ? defaultThreads()
        : resolveThreads('threads', options.threads, platform.autoThreads);
      const backendOptions = webgpu.resolveBackendOptions(options);
      const gpu = await webgpu.acquire(backendOptions);  // null: WASM only
      const loadedCore = await load();
      const main = new WasmMha(loadedCore.core, config);
      let backend = main;
      if (THREADS_VARIANTS.includes(loadedCore.variant)) {
        // The pthreads module splits work over its own threads in shared memory: no worker pool.
        main.threads = threads === 1 ? 1 : loadedCore.core.threadCount();
      } else if (threads > 1) {
        backend = new PooledMha(main, config, { threads, auto, pool: getPool(loadedCore) });
      }
      return new MultiHeadAttention(await webgpu.wrap(backend, config, gpu, backendOptions), config);
    }

    /** Resolved configuration (defaults filled in). */
    get config() {
      return { ...this.#config };
    }

    /**
     * 'webgpu' (with backend 'auto', calls under webgpuMinFlops still run on WASM) or 'wasm'
     * (backend 'wasm'; 'auto' before its first large call or without a usable GPU; after the
     * WebGPU device was lost).
     */
    get backend() {
      return this.#live('backend').backend ?? 'wasm';
    }

    /** Threads forward() computes on (1: the calling thread only, as after a worker failure). */
    get threads() {
      return this.#live('threads').threads ?? 1;
    }

    /** The state-dict entries this module expects: [{ name, shape }], PyTorch's order. */
    get stateDictShapes() {
      return this.#live('stateDictShapes').parameterSpecs();
    }

    /** Loads torch.nn.MultiheadAttention.state_dict() entries (tensors or Float32Arrays). */
    loadStateDict(stateDict) {
      const backend = this.#live('loadStateDict');
      backend.loadStateDict(resolveStateDict(backend.parameterSpecs(), stateDict));
    }

    /**
     * query [B, L, E] (or [L, E]), key [B, S, kdim], value [B, S, vdim].
     * Resolves to { output [B, L, E], attnWeights: [B, L, S] | [B, h, L, S] | null }.
     */
    async forward(query, key, value, options) {
      const backend = this.#live('forward');
      const plan = resolveMhaForward(this.#config, query, key, value, options);
      const { output, weights } = await backend.forward(plan, this.#config);
      return {
        output: tensor(output, plan.outputShape),
        attnWeights: weights ? tensor(weights, plan.weightsShape) : null,
      };
    }

    /**
     * attention-math §5: head `head`'s score matrix W_i = W_i^Q W_i^Kᵀ ([embedDim, kdim], so that
     * the head's scores are x W_i yᵀ / √d_k without biases), its rank (<= headDim) and the
     * parameter counts of the factored and the full form.
     */
    headBilinearForm(head) {
      const backend = this.#live('headBilinearForm');
      const h = checkIndex('head', head, this.#config.numHeads);
      const { matrix, shape, rank, factoredParameters, fullParameters } = backend.headBilinearForm(h);
      return { matrix: tensor(matrix, shape), rank, factoredParameters, fullParameters };
    }

    /** Frees the module's WASM memory. Later calls throw DisposedError. */
    dispose() {
      if (!this.#backend) return;
      registry.unregister(this);
      this.#backend.dispose();
      this.#backend = null;
    }

    #live(method) {
      if (!this.#backend) {
        throw new DisposedError(`MultiHeadAttention.${method}: the module was disposed`);
      }
      return this.#backend;
    }
  }

  /**
   * softmax(q kᵀ · scale + attnMask) v over [..., L, dk], [..., S, dk], [..., S, dv].
   * options: { attnMask?, isCausal?, scale? = 1/√dk, needWeights? }.
   * Resolves to { output [..., L, dv], attnWeights [..., L, S] | null }.
   */
  async function scaledDotProductAttention(q, k, v, options) {
    const plan = resolveSdpa(q, k, v, options);
    const { output, weights } = wasmSdpa(await getCore(), plan);
    return {
      output: tensor(output, plan.outputShape),
      attnWeights: weights ? tensor(weights, plan.weightsShape) : null,
    };
  }

  /**
   * Plain self-attention softmax(X Xᵀ / √C) X, no weights (Q = K = V = X).
   * Resolves to { output, attnWeights (only with returnWeights) }.
   */
  async function selfAttention(x, options) {
    const { x: t, needWeights } = resolveSelfAttention(x, options);
    return scaledDotProductAttention(t, t, t, { needWeights });
  }

  /** Bytes in use on the WASM heap: flat across calls when nothing leaks. */
  async function wasmMemoryInUse() {
    return (await getCore()).memoryInUse();
  }

  /** Size of the WASM heap in bytes: it only grows, so it is the high-water mark of all calls. */
  async function wasmHeapBytes() {
    return (await getCore()).HEAPU8.length;
  }

  /** The `threads` a module gets without the option: { threads, auto }. */
  function defaultThreads() {
    const value = platform.defaultThreads();
    return resolveThreads(value === 'auto' ? 'threads' : 'WEBATTENTION_THREADS', value, platform.autoThreads);
  }

  /**
   * What this engine runs: { backend: 'wasm', simd, wasmModule: 'simd' | 'scalar', threads }
   * (threads: what a module created without the `threads` option uses at most).
   */
  async function capabilities() {
    const { variant, core } = await load();
    const threads = THREADS_VARIANTS.includes(variant) ? core.threadCount() : defaultThreads().threads;
    return { backend: 'wasm', simd: variant !== 'scalar', wasmModule: variant, threads };
  }

  // ready(): resolves once the core is loaded, without handing out its internals.
  const ready = () => getCore().then(() => undefined);
  return { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready };
}

