// Node entry: loads the chosen module once (node_core.js; the pool's workers get the compiled
// module). WEBATTENTION_WASM=<name> forces a module (web/modules.json: simd|relaxed|scalar);
// WEBATTENTION_THREADS=auto|<n> sets the default of create()'s `threads` option. Workers are worker_threads, unreferenced while idle.
import { createRequire } from 'node:module';
import os from 'node:os';
import { bindApi } from './api.js';
import { loadNodeCore } from './node_core.js';
import { pickVariant } from './variant.js';

// Workers inherit node's flags, but --input-type (node --input-type=module -e ...) stops a worker
// from loading a file, and Worker refuses V8's --experimental-wasm-* flags (which hold for the
// whole process anyway, workers included: e.g. --experimental-wasm-relaxed-simd on Node 20).
const workerExecArgv = () => process.execArgv.filter((arg, i, all) =>
  !arg.startsWith('--input-type') && all[i - 1] !== '--input-type'
  && !arg.startsWith('--experimental-wasm-'));

// node:worker_threads is loaded on the first spawn: its import is ~2 ms of a cold start that a
// process with threads: 1 (or only small calls) never needs.
const require = createRequire(import.meta.url);

function spawnWorker(variant) {
  const { Worker } = require('node:worker_threads');
  const worker = new Worker(new URL('./node_worker.js', import.meta.url), {
    name: `webattention ${variant}`, execArgv: workerExecArgv(),
  });
  return {
    post: (message, transfer) => worker.postMessage(message, transfer),
    onMessage: (fn) => worker.on('message', fn),
    onFailure: (fn) => {
      worker.on('error', (e) => fn(`threw ${e?.name ?? 'an error'}: ${e?.message ?? e}`));
      worker.on('messageerror', () => fn('sent a message that could not be read'));
      worker.on('exit', (code) => fn(`exited (code ${code})`));
    },
    terminate: () => { worker.terminate(); },
    ref: () => worker.ref(),
    unref: () => worker.unref(),
  };
}

const api = bindApi(() => loadNodeCore(pickVariant(process.env.WEBATTENTION_WASM)), {
  autoThreads: Math.min(os.availableParallelism?.() ?? os.cpus().length, 4),
  defaultThreads: () => {
    const env = process.env.WEBATTENTION_THREADS;
    return env === undefined || env === '' ? 'auto' : /^[0-9]+$/.test(env) ? Number(env) : env;
  },
  spawnWorker,
});

export const { MultiHeadAttention, scaledDotProductAttention, selfAttention, wasmMemoryInUse, wasmHeapBytes, capabilities, ready } = api;
export * from './errors.js';
