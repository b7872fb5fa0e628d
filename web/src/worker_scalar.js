// A pool worker in browsers, for the scalar module: see pool.js and worker_core.js. One file
// per module, each importing its glue statically, so that bundlers need no code splitting in
// workers and a worker can only run the module the calling thread picked.
import create from '../dist/webattention_core_scalar.mjs';
import { serveBrowserWorker } from './worker_core.js';

serveBrowserWorker('scalar', create);
