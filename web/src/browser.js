// Browser entry: the literal new URL(..., import.meta.url), new Worker(new URL(...)) and
// import(...) forms let bundlers find and copy the modules and their workers; only the one the
// engine can run is fetched. globalThis.WEBATTENTION_WASM ('simd' | 'relaxed' | 'scalar' | 'mt' | 'mt-relaxed') and
// WEBATTENTION_THREADS ('auto' | n) override the defaults, as the environment variables do in Node.
import { bindApi } from './api.js';
import { THREADS_VARIANTS, pickVariant } from './variant.js';
import { instantiateCore } from './wasm_backend.js';

const DIST = '../dist/';
// By a URL bundlers do not see (below): the pthreads modules' glue.
const threadsGlue = (name) => () => import(/* @vite-ignore */ /* webpackIgnore: true */ new URL(DIST + name, import.meta.url).href);

const modules = {
  simd: {
    glue: () => import('../dist/webattention_core.mjs'),
    wasm: () => new URL('../dist/webattention_core.wasm', import.meta.url).href,
    worker: () => new Worker(new URL('./worker_simd.js', import.meta.url), { type: 'module' }),
  },
  // SIMD128 + pthreads (with or without relaxed SIMD): the core splits work over its own threads
  // in shared memory. Its glue starts its pthread workers itself (the .worker.js beside it),
  // which bundlers cannot follow (Vite fails on it), so it is loaded by a URL they do not see: it
  // runs where the package is served as is; in a bundled app the import fails at once and the
  // single-threaded module of the same kind (`fallback`) is used.
  mt: { glue: threadsGlue('webattention_core_mt.mjs'), fallback: 'simd' },
  'mt-relaxed': { glue: threadsGlue('webattention_core_mt_relaxed.mjs'), fallback: 'relaxed' },
  relaxed: {
    glue: () => import('../dist/webattention_core_relaxed.mjs'),
    wasm: () => new URL('../dist/webattention_core_relaxed.wasm', import.meta.url).href,
    worker: () => new Worker(new URL('./worker_relaxed.js', import.meta.url), { type: 'module' }),
  },
  scalar: {
    glue: () => import('../dist/webattention_core_scalar.mjs'),
    wasm: () => new URL('../dist/webattention_core_scalar.wasm', import.meta.url).href,
    worker: () => new Worker(new URL('./worker_scalar.js', import.meta.url), { type: 'module' }),
  },
};

async function compile(url) {
  if (typeof WebAssembly.compileStreaming === 'function') {
    try {
      return await WebAssembly.compileStreaming(fetch(url, { credentials: 'same-origin' }));
    } catch {
      // Served without Content-Type: application/wasm: compile from the bytes instead.
    }
  }
  const response = await fetch(url, { credentials: 'same-origin' });
  if (!response.ok) throw new Error(`webattention: failed to fetch ${url} (HTTP ${response.status})`);
  return WebAssembly.compile(await response.arrayBuffer());
}

function spawnWorker(variant) {
  const worker = modules[variant].worker();
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    onMessage: (fn) => { worker.onmessage = (event) => fn(event.data); },
    onFailure: (fn) => {
      worker.onerror = (event) => {
        event.preventDefault?.();
        fn(`failed: ${event.message || 'its script could not be loaded or threw'}`);
      };
      worker.onmessageerror = () => fn('sent a message that could not be read');
    },
    terminate: () => worker.terminate(),
  };
}

// The pthreads module waits for its workers before it resolves; where they cannot start (a
// bundler that did not copy the worker, a CSP), give up after this long and use 'simd'.
const THREADS_MODULE_TIMEOUT_MS = 15000;

async function loadThreadsModule(variant) {
  const { default: create } = await modules[variant].glue();
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer in ${THREADS_MODULE_TIMEOUT_MS} ms`)), THREADS_MODULE_TIMEOUT_MS);
  });
  try {
    // No locateFile: the glue finds its .wasm and worker with new URL(..., import.meta.url).
    return await Promise.race([create({}), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const api = bindApi(async () => {
  let variant = pickVariant(globalThis.WEBATTENTION_WASM, { threadsModule: true });
  if (THREADS_VARIANTS.includes(variant)) {
    try {
      return { core: await loadThreadsModule(variant), variant };
    } catch (e) {
      const fallback = modules[variant].fallback;
      console.warn(`webattention: the pthreads module did not start (${e.message ?? e}); using the single-threaded '${fallback}' module`);
      variant = fallback;
    }
  }
  const { glue, wasm } = modules[variant];
  const [{ default: create }, module] = await Promise.all([glue(), compile(wasm())]);
  return { core: await instantiateCore(create, module), variant, module };
}, {
  autoThreads: typeof Worker === 'function' ? Math.min(globalThis.navigator?.hardwareConcurrency || 1, 4) : 1,
  defaultThreads: () => globalThis.WEBATTENTION_THREADS ?? 'auto',
  spawnWorker,
});

export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export * from './errors.js';
