// A bench page's frame: sets the package's module (?wasm=, default simd: a cross-origin-isolated
// page would otherwise load the pthreads one), runs `work(query, log)` and leaves { done: true,
// ...its result, env } or { done: true, error } in window[resultName], which
// bench/lib/browser_page.mjs polls for. Lines logged start with `[prefix] `, which the runner prints.
export async function runPage(resultName, prefix, work) {
  const log = (line) => console.log(`[${prefix}] ${line}`);
  const query = new URLSearchParams(location.search);
  globalThis.WEBATTENTION_WASM = query.get('wasm') ?? 'simd';
  try {
    const result = await work(query, log);
    window[resultName] = { done: true, ...result, env: { userAgent: navigator.userAgent } };
  } catch (e) {
    console.error(e);
    window[resultName] = { done: true, error: String(e?.stack ?? e) };
  }
}
