// The pthreads modules under Node (WEBATTENTION_WASM=mt | mt-relaxed): the core's own threads in
// one shared WASM memory, so that cached calls (a decode step) split their work too, where the
// single-threaded modules' worker pool runs only uncached calls. Opt-in: Node never picks them.
//
// Emscripten 3.1.6 builds them for browsers (ES module glue, -sENVIRONMENT=web,worker): at load
// the glue starts navigator.hardwareConcurrency Web Workers, each running the module's
// <stem>.worker.js, which talks to it with self.onmessage / postMessage and imports the glue.
// Node 20 has neither Worker nor navigator. While the glue loads (every worker starts then:
// PTHREAD_POOL_SIZE), this file lends it a Worker over worker_threads whose thread runs the
// worker script with the browser names it uses bound to its parentPort, and takes it back after.
// The workers are unreferenced once loaded: an idle core does not keep the process alive (the
// threads run only inside a call).
import os from 'node:os';
import { readFile } from 'node:fs/promises';
import { Worker as NodeWorker } from 'node:worker_threads';
import { distUrl, loadGlueAndModule } from './node_core.js';
import { instantiateThreadsCore } from './wasm/instantiate_core.js';

// A worker thread's bootstrap (CommonJS, eval'd): the browser names the worker script uses, then
// the script itself (workerData.source).
const BOOTSTRAP = `
const { parentPort, workerData } = require('node:worker_threads');
globalThis.self = globalThis;
globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);
parentPort.on('message', (data) => globalThis.onmessage?.({ data }));
(0, eval)(workerData.source);
`;

/**
 * A Web Worker's surface (postMessage, onmessage, terminate) over a worker_threads Worker. A
 * thread that fails calls fail(error) (the glue's own onerror would throw from the event, which
 * in Node ends the process).
 */
function webWorkerClass(source, started, fail) {
  return class WebWorker {
    constructor() {
      this.thread = new NodeWorker(BOOTSTRAP, { eval: true, workerData: { source }, execArgv: [] });
      this.thread.on('message', (data) => this.onmessage?.({ data }));
      this.thread.on('error', fail);
      started.push(this.thread);
    }
    postMessage(message, transfer) { this.thread.postMessage(message, transfer); }
    terminate() { this.thread.terminate(); }
  };
}

/** Runs `load()` with globalThis.Worker lent, then restores it. */
async function withWorkerClass(WorkerClass, load) {
  const saved = globalThis.Worker;
  globalThis.Worker = WorkerClass;
  try {
    return await load();
  } finally {
    if (saved === undefined) delete globalThis.Worker; else globalThis.Worker = saved;
  }
}

// navigator.hardwareConcurrency: the glue's pool size at load, and the core's
// std::thread::hardware_concurrency() at every call. Node >= 21 has navigator; on Node 20 it is
// defined, with that one field, as Node 21 would.
function ensureNavigator() {
  if (globalThis.navigator !== undefined) return;
  Object.defineProperty(globalThis, 'navigator', {
    value: { hardwareConcurrency: os.availableParallelism?.() ?? os.cpus().length },
    configurable: true, writable: true,
  });
}

/**
 * Loads pthreads module `entry` (web/modules.json) from web/dist: { core, variant }. The worker
 * script imports the glue by its file URL (mainScriptUrlOrBlob). A thread that fails, or no answer
 * in instantiateThreadsCore's time, rejects it with an error naming the module (as the browser
 * entry's warning does).
 */
export async function loadNodeThreadsCore(entry) {
  const [{ create, module }, source] = await Promise.all([loadGlueAndModule(entry.name),
    readFile(distUrl(entry.name, '.worker.js'), 'utf8')]);
  const started = [];
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  ensureNavigator();
  try {
    const core = await withWorkerClass(webWorkerClass(source, started, fail),
      () => instantiateThreadsCore(create, module, { mainScriptUrlOrBlob: distUrl(entry.name, '.mjs').href }, failed));
    for (const thread of started) thread.unref();
    return { core, variant: entry.name };
  } catch (e) {
    for (const thread of started) thread.terminate();
    throw new Error(`webattention: the pthreads module '${entry.name}' did not start: ${e?.message ?? e}`);
  }
}
