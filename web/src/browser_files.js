// Where the browser loader fetches each file of a WASM module from: configure({ wasmPaths })'s
// URL when it names one, else the default the bundler saw (web/dist/browser_modules.js: the file
// next to the package's code, or where the bundler copied it). And worker scripts that live on
// another origin than the page's (which `new Worker(url)` refuses) or inlined as data: URLs,
// behind a same-origin blob: URL.
import { LOADERS } from '../dist/browser_modules.js';
import { wasmPaths } from './configure.js';
import { moduleFiles } from './module_files.js';
import { moduleEntry } from './variant.js';

const pageUrl = () => globalThis.location?.href;

/**
 * The URL of `variant`'s file of `kind` ('glue' | 'wasm' | 'threadWorker' | 'poolWorker'). null
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
 * A URL `new Worker()` accepts for the script at `url`: itself on the page's origin, else a
 * blob: URL (the page's origin) whose script imports it, as a module (type 'module') or with
 * importScripts (type 'classic'). The server of `url` must then allow CORS and, on a
 * cross-origin-isolated page, send Cross-Origin-Resource-Policy: cross-origin.
 */
export function workerScriptUrl(url, type) {
  const { protocol, origin } = new URL(url);
  if (protocol === 'blob:' || origin === globalThis.location?.origin) return url;
  if (protocol === 'data:') {
    // A small script a bundler inlined (Vite: under 4 KiB): a data: worker has an opaque origin,
    // which can neither share memory with the page nor import the glue. The same text as a blob.
    const comma = url.indexOf(',');
    const payload = url.slice(comma + 1);
    return blobScript(url.slice(0, comma).endsWith(';base64') ? atob(payload) : decodeURIComponent(payload));
  }
  return blobScript(type === 'module' ? `import ${JSON.stringify(url)};\n` : `importScripts(${JSON.stringify(url)});\n`);
}

const blobScript = (text) => URL.createObjectURL(new Blob([text], { type: 'text/javascript' }));
