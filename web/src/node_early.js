// The WASM module's load (node_core.js: read, compile, glue import, instantiate), started by the
// first module the package's Node entry evaluates. Bundled (scripts/bundle_node.mjs), web/dist/
// node.js is a small module that imports this file and only then imports the bundle of node.js:
// the .wasm is read on libuv's threads and compiled on V8's while the main thread parses the
// package's ~150 KB of JS, instead of after it. In the source tree node.js imports it like any
// module (no head start, the same behaviour).
// The module is the one node.js picks when WEBATTENTION_WASM names none; with it set, or after
// a failure here, node.js loads on its own (and reports a bad name as a typed error at create()).
import { loadNodeCore } from './node_core.js';
import { pickVariant } from './wasm/variant.js';

const forced = process.env.WEBATTENTION_WASM;
let early = null;
if (forced === undefined || forced === '') {
  const variant = pickVariant(undefined);
  const loading = loadNodeCore(variant);
  loading.catch(() => {});  // not an unhandled rejection: the create() that takes it reports it
  early = { variant, loading };
}

/** The early load of `variant` ({ core, variant, module } promise), once; else null. */
export function takeEarlyLoad(variant) {
  if (early?.variant !== variant) return null;
  const { loading } = early;
  early = null;  // a retry after a failure loads afresh
  return loading;
}
