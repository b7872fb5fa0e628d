// Which adapter the WebGPU tests run on, and what they expect of it: the same suite runs on
// SwiftShader (CPU, no GPU needed: what CI and this repo's scripts use) and on a hardware GPU
// (Node: VK_ICD_FILENAMES pointing at the GPU's Vulkan driver; Chromium: whatever adapter it
// offers). Environment-free: the Node tests and page.mjs import it.

/**
 * The Vulkan driver the Node tests use when none is set (tests/webgpu/node_setup.mjs): Debian's
 * chromium ships SwiftShader's, so no GPU is needed; scripts/gpu_check.sh falls back to it too.
 */
export const SWIFTSHADER_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';

/** Fixtures bigger than this (FLOPs of one forward) are not run on WebGPU: SwiftShader is slow. */
export const MAX_FIXTURE_FLOPS = 2e8;

/** The adapter the package itself gets: web/src/webgpu/device.js asks for this one too. */
export const requestTestAdapter = (gpu) => gpu.requestAdapter({ powerPreference: 'high-performance' });

/**
 * 'software' for SwiftShader or any other fallback (CPU) adapter, else 'hardware'. Decided
 * here from adapter.info, independently of the package's own rule (isSoftwareAdapter), so that
 * the tests can check that rule.
 */
export function adapterKind(adapter) {
  const info = adapter.info ?? {};
  const fallback = info.isFallbackAdapter ?? adapter.isFallbackAdapter ?? false;
  const swiftshader = [info.vendor, info.architecture, info.description].some((s) => /swiftshader/i.test(s ?? ''));
  return fallback || swiftshader ? 'software' : 'hardware';
}

/** adapter.info's descriptive fields, as plain data (for reports and test titles). */
export const adapterInfo = (adapter) =>
  Object.fromEntries(['vendor', 'architecture', 'device', 'description', 'isFallbackAdapter'].map((k) => [k, adapter.info?.[k]]));

/**
 * Where backend 'auto' runs a call of at least DEFAULT_WEBGPU_MIN_FLOPS (no webgpuMinFlops
 * given): on a hardware adapter, the GPU; a software one 'auto' never uses (device.js: it is
 * slower than WASM at every size), so WASM. Smaller calls stay on WASM on either.
 */
export const autoBackendForLargeCalls = (kind) => (kind === 'hardware' ? 'webgpu' : 'wasm');
