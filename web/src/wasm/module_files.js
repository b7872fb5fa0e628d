// The files of one WASM module (an entry of web/modules.json) in web/dist/, by kind: the one
// naming rule shared by the generated browser loaders (scripts/gen_modules.mjs), the file names
// configure({ wasmPaths }) accepts (configure.js) and the browser loader (browser_files.js).
// glue: the Emscripten ES module; threadWorker: the pthreads glue's own worker script (the browser
// starts it from its text, embedded in browser_modules.js); poolWorker: the worker-pool entry of a
// single-threaded module.
export function moduleFiles({ stem, threads, worker }) {
  return threads
    ? { glue: `${stem}.mjs`, wasm: `${stem}.wasm`, threadWorker: `${stem}.worker.js` }
    : { glue: `${stem}.mjs`, wasm: `${stem}.wasm`, poolWorker: worker };
}
