// Where the browser loader fetches each file of a WASM module from: configure({ wasmPaths })'s
// URL when it names one, else the default the bundler saw (web/dist/browser_modules.js: the file
// next to the package's code, or where the bundler copied it). And worker scripts that live on
// another origin than the page's (which `new Worker(url)` refuses) behind a same-origin blob: URL.
import { LOADERS } from '../dist/browser_modules.js';
import { wasmPaths } from './api/configure.js';
import { moduleFiles } from './wasm/module_files.js';
import { moduleEntry } from './wasm/variant.js';

const pageUrl = () => globalThis.location?.href;

/**
 * The URL of `variant`'s file of `kind` ('glue' | 'wasm' | 'poolWorker'). null
 * for a poolWorker wasmPaths does not name: LOADERS' own `new Worker(...)` starts that one.
 */
export function fileUrl(variant, kind) {
  const file = moduleFiles(moduleEntry(variant))[kind];
  const paths = wasmPaths();
  if (typeof paths === 'string') return new URL(file, new URL(paths.endsWith('/') ? paths : `${paths}/`, pageUrl())).href;
  if (paths && Object.hasOwn(paths, file)) return new URL(paths[file], pageUrl()).href;
  return kind === 'poolWorker' ? null : LOADERS[variant][kind]();
}

/**
 * A URL `new Worker(url, { type: 'module' })` accepts for the module script at `url`: itself on
 * the page's origin, else a blob: URL (the page's origin) whose script imports it. The server of
 * `url` must then allow CORS, as for the glue and the .wasm.
 */
export function moduleWorkerUrl(url) {
  const { protocol, origin } = new URL(url);
  if (protocol === 'blob:' || origin === globalThis.location?.origin) return url;
  return scriptBlobUrl(`import ${JSON.stringify(url)};\n`);
}

/** A same-origin blob: URL of a script's text (a worker script embedded in the package). */
export const scriptBlobUrl = (text) => URL.createObjectURL(new Blob([text], { type: 'text/javascript' }));
