// A pool worker under Node (worker_threads): see pool.js and worker_core.js.
import { parentPort } from 'node:worker_threads';
import { loadGlue } from './node_core.js';
import { serve } from './pool/worker_core.js';

serve({
  post: (message, transfer) => parentPort.postMessage(message, transfer),
  onMessage: (fn) => parentPort.on('message', fn),
}, loadGlue);
