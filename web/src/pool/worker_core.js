// What runs inside a pool worker (see pool.js), for Node's worker_threads and browser workers
// alike: one single-threaded WASM instance holding one MultiHeadAttention per module that uses
// this worker (message field mhaId), answering the calling thread's messages in order. Typed
// errors go back as data; anything else (a WASM trap, a missing glue, an unknown message) is
// fatal: the calling thread then shuts the pool down.
import { WebAttentionError, errorToData } from '../base/errors.js';
import { WasmExecutor } from '../wasm/wasm_executor.js';
import { instantiateCore } from '../wasm/instantiate_core.js';

/**
 * endpoint: { post(message, transfer), onMessage(fn) }; loadGlue(variant) resolves to the
 * Emscripten factory of that variant (and throws for a variant this worker cannot load).
 */
export function serve(endpoint, loadGlue) {
  let core = null;
  const modules = new Map();  // mhaId → its WasmExecutor
  const get = (mhaId) => {
    const m = modules.get(mhaId);
    if (!m) throw new Error(`no module ${mhaId} on this worker`);
    return m;
  };
  const handlers = {
    async init({ module, variant }) {
      core = await instantiateCore(await loadGlue(variant), module);
      return {};
    },
    create({ mhaId, config, coreConfig }) {
      modules.set(mhaId, new WasmExecutor(core, config, coreConfig));
      return {};
    },
    load({ mhaId, entries }) {
      get(mhaId).loadStateDict(entries);
      return {};
    },
    run({ mhaId, task, plan }) {
      return get(mhaId).runTask(plan, task);
    },
    project({ mhaId, heads, rows }) {
      return { output: get(mhaId).projectOutput(heads, rows) };
    },
    dispose({ mhaId }) {
      get(mhaId).dispose();
      modules.delete(mhaId);
      return {};
    },
    memory() {
      return { bytes: core.memoryInUse() };
    },
  };
  // One message after the other, each after the previous one is done (init is asynchronous).
  let queue = Promise.resolve();
  endpoint.onMessage((message) => {
    queue = queue.then(async () => {
      let reply;
      try {
        const handler = handlers[message.type];
        if (!handler) throw new Error(`unknown message type '${message.type}'`);
        reply = { ...(await handler(message)), id: message.id };
      } catch (e) {
        reply = e instanceof WebAttentionError
          ? { id: message.id, error: errorToData(e) }
          : { id: message.id, fatal: `failed: ${e?.message ?? e}` };
      }
      const transfer = [reply.output, reply.heads, reply.weights].filter(Boolean).map((a) => a.buffer);
      endpoint.post(reply, transfer);
    });
  });
}

/**
 * A browser pool worker for one module: `variant` is the module its file imports (statically,
 * as `create`), and the only one it will run.
 */
export function serveBrowserWorker(variant, create) {
  serve({
    post: (message, transfer) => self.postMessage(message, transfer),
    onMessage: (fn) => { self.onmessage = (event) => fn(event.data); },
  }, (asked) => {
    if (asked !== variant) throw new Error(`this worker runs the ${variant} module, not '${asked}'`);
    return create;
  });
}
