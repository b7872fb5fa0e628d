// A pool worker in browsers, for the scalar module: see pool.js and worker_core.js. One file per
// module, each importing its glue statically, so that bundlers need no code splitting in
// workers and a worker can only run the module the calling thread picked.
import create from '../dist/webattention_core_scalar.mjs';
import { serve } from './worker_core.js';

serve({
  post: (message, transfer) => self.postMessage(message, transfer),
  onMessage: (fn) => { self.onmessage = (event) => fn(event.data); },
}, (variant) => {
  if (variant !== 'scalar') throw new Error(`this worker runs the scalar module, not '${variant}'`);
  return create;
});
