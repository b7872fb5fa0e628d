// Fetches and compiles a .wasm in the browser, and says what went wrong in terms of the fix: a
// server that answers HTML where the .wasm should be (Vite's dev server, when it pre-bundles the
// package, answers its index.html; so does any single-page-app fallback for a missing file) gives
// a LoadError naming the file, what came instead and the fixes, not WebAssembly.compile()'s
// "expected magic word 00 61 73 6d".
import { LoadError } from '../base/errors.js';

const MAGIC = [0x00, 0x61, 0x73, 0x6d];  // "\0asm", the first bytes of every WebAssembly module

const FIXES = 'Under the Vite dev server, add optimizeDeps: { exclude: [\'webattention\'] } to vite.config.js; '
  + 'otherwise check that this URL serves the package\'s web/dist/ files, or say where they are with '
  + 'configure({ wasmPaths }) before the first call';

/** A LoadError for file `url`: what happened, then the fixes. */
export function loadError(url, what, actual) {
  return new LoadError(`webattention: ${url} ${what}. ${FIXES}.`, {
    argument: 'wasmPaths', expected: 'the package\'s file at this URL', actual,
  });
}

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join(' ');

async function fetchOk(url) {
  let response;
  try {
    response = await fetch(url, { credentials: 'same-origin' });
  } catch (e) {
    throw loadError(url, `could not be fetched (${e?.message ?? e})`, 'a failed fetch');
  }
  if (!response.ok) throw loadError(url, `could not be fetched (HTTP ${response.status})`, `HTTP ${response.status}`);
  return response;
}

/** Resolves to the compiled WebAssembly.Module at `url`; rejects with a LoadError. */
export async function fetchWasmModule(url) {
  let response = await fetchOk(url);
  const type = response.headers.get('content-type') ?? '';
  if (typeof WebAssembly.compileStreaming === 'function' && type.startsWith('application/wasm')) {
    try {
      // The response itself, not a clone: the engine may then cache the compiled code by URL.
      return await WebAssembly.compileStreaming(response);
    } catch {
      // Fetched again below, for the bytes, which say what it was.
      response = await fetchOk(url);
    }
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (!MAGIC.every((b, i) => bytes[i] === b)) {
    const start = new TextDecoder().decode(bytes.subarray(0, 16)).replace(/\s+/g, ' ');
    const html = /^\s*</.test(start) ? ', an HTML page' : '';
    throw loadError(url, `is not a WebAssembly module: it starts with ${hex(bytes.subarray(0, 4))} `
      + `(${JSON.stringify(start)}${html}; content-type ${type || 'none'}), not 00 61 73 6d`,
    `${type || 'no content-type'}: ${hex(bytes.subarray(0, 4))}`);
  }
  return WebAssembly.compile(bytes);
}
