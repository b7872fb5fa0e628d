// What the public API needs from its platform, in one object: the WASM core (loaded once), the
// worker pool every module with threads > 1 shares, and the `threads` defaults. The entry file
// (node.js or browser.js) calls api.js's bindApi() with its loader and platform, which makes the
// package's one Runtime, before anything is exported.
import { lockSettings } from './configure.js';
import { WorkerPool } from '../pool/pool.js';
import { resolveThreads } from '../checks/module_config.js';

export class Runtime {
  #loadCore;
  #platform;
  #loaded = null;
  #preloaded = null;
  #pool = null;

  /**
   * loadCore() resolves to { core, variant: 'simd' | 'relaxed' | 'scalar' | 'mt' | 'mt-relaxed',
   * module }. platform: { autoThreads: number ('auto'; 1 where workers cannot run),
   * defaultThreads() (the `threads` option's default: 'auto' unless overridden),
   * spawnWorker(variant) (pool.js), loadWebGpuExecutor() (resolves to the WebGpuExecutor class:
   * the browser entry imports it statically, Node lazily), loadCheckpointMappings() (resolves to
   * lazy_exports.js: fromConfig()'s and fromGguf()'s mappings, lazily in Node too), preload (true: start loading the WASM
   * module when the entry binds the API, preload() below) }.
   */
  constructor(loadCore, platform) {
    this.#loadCore = loadCore;
    this.#platform = platform;
  }

  /**
   * Starts loading the WASM module before anything asks for it (Node's entry, at import): its file
   * is read and compiled while the app goes on, and the first create() finds it loaded or on its
   * way. Settings stay open until then; a failure shows at that first call, which loads again.
   */
  preload() {
    if (this.#preloaded || this.#loaded) return;
    const preloaded = (async () => this.#loadCore())();  // a throw becomes a rejection: import never throws
    this.#preloaded = preloaded;
    preloaded.catch(() => {
      if (this.#preloaded === preloaded) this.#preloaded = null;
    });
  }

  /** Loads (once) the WASM module: { core, variant, module }. A failed load may be retried. */
  load() {
    const preloaded = this.#preloaded;
    this.#preloaded = null;
    this.#loaded ??= (preloaded ?? this.#loadCore()).then((loaded) => {
      lockSettings();  // configure() can no longer change where the files come from
      return loaded;
    }, (e) => {
      this.#loaded = null;
      throw e;
    });
    return this.#loaded;
  }

  async core() {
    return (await this.load()).core;
  }

  /** The shared worker pool of the loaded module; a new one once the last has stopped. */
  pool({ module, variant }) {
    if (!this.#pool || this.#pool.closed) {
      this.#pool = new WorkerPool({ spawnWorker: this.#platform.spawnWorker, module, variant });
    }
    return this.#pool;
  }

  /** Resolves to the WebGpuExecutor class (webgpu/webgpu_executor.js). */
  loadWebGpuExecutor() {
    return this.#platform.loadWebGpuExecutor();
  }

  /** Resolves to lazy_exports.js (attentionOptionsFromConfig(), attentionOptionsFromGguf() and their options). */
  loadCheckpointMappings() {
    return this.#platform.loadCheckpointMappings();
  }

  /** The create() `threads` option resolved: { threads, auto }. */
  threads(option) {
    if (option !== undefined) return resolveThreads('threads', option, this.#platform.autoThreads);
    const value = this.#platform.defaultThreads();
    return resolveThreads(value === 'auto' ? 'threads' : 'WEBATTENTION_THREADS', value, this.#platform.autoThreads);
  }
}
