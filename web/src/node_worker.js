// A pool worker under Node (worker_threads): see pool.js and worker_core.js.
import { parentPort } from 'node:worker_threads';
import { serve } from './worker_core.js';

const glues = {
  simd: () => import('../dist/webattention_core.mjs'),
  relaxed: () => import('../dist/webattention_core_relaxed.mjs'),
  scalar: () => import('../dist/webattention_core_scalar.mjs'),
};

serve({
  post: (message, transfer) => parentPort.postMessage(message, transfer),
  onMessage: (fn) => parentPort.on('message', fn),
}, async (variant) => (await glues[variant]()).default);
