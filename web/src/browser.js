// Browser entry: web/dist/browser_modules.js (generated from web/modules.json) holds each module's
// loaders in the literal import(...), new URL(..., import.meta.url) and new Worker(new URL(...))
// forms that let bundlers find and copy the modules and their workers; only the one the engine
// can run is fetched. globalThis.WEBATTENTION_WASM (a module's name: 'simd' | 'relaxed' | 'scalar'
// | 'mt' | 'mt-relaxed') and WEBATTENTION_THREADS ('auto' | n) override the defaults, as the
// environment variables do in Node.
import { LOADERS } from '../dist/browser_modules.js';
import { bindApi } from './api.js';
import { THREADS_VARIANTS, moduleEntry, pickVariant } from './variant.js';
import { instantiateCore } from './wasm_backend.js';

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
  const worker = LOADERS[variant].worker();
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
// bundler that did not copy the worker, a CSP), give up after this long and use its fallback.
const THREADS_MODULE_TIMEOUT_MS = 15000;

async function loadThreadsModule(variant) {
  const { default: create } = await LOADERS[variant].glue();
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
      const { fallback } = moduleEntry(variant);
      console.warn(`webattention: the pthreads module did not start (${e.message ?? e}); using the single-threaded '${fallback}' module`);
      variant = fallback;
    }
  }
  const { glue, wasm } = LOADERS[variant];
  const [{ default: create }, module] = await Promise.all([glue(), compile(wasm())]);
  return { core: await instantiateCore(create, module), variant, module };
}, {
  autoThreads: typeof Worker === 'function' ? Math.min(globalThis.navigator?.hardwareConcurrency || 1, 4) : 1,
  defaultThreads: () => globalThis.WEBATTENTION_THREADS ?? 'auto',
  spawnWorker,
});

export { loadSafetensors } from './safetensors.js';
export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export * from './errors.js';
export { KvCache } from './decoding.js';
