// The package, imported on first use rather than statically so that a missing build (web/dist)
// shows as an error on the page instead of a silently dead module. The bindings are live: they
// are undefined until loadPackage() has resolved.

export let MultiHeadAttention, GpuStep, GpuBatch, scaledDotProductAttention, ready, wasmMemoryInUse, loadSafetensors, capabilities;

export async function loadPackage() {
  if (MultiHeadAttention) return;
  try {
    ({ MultiHeadAttention, GpuStep, GpuBatch, scaledDotProductAttention, ready, wasmMemoryInUse, loadSafetensors, capabilities } = await import('../src/browser.js'));
  } catch (e) {
    throw new Error(`could not load the package (${e.message}); was it built? run: bash scripts/build.sh`);
  }
}
