// The GPU the bench/gpu scripts time: npm `webgpu` (Dawn) on the Vulkan driver VK_ICD_FILENAMES
// names, its high-performance adapter; without one the script says so and exits 2.
import { create, globals } from 'webgpu';

// Held for the process's life: Dawn's instance must outlive its adapter and devices (a collected
// GPU object crashes the process).
let held = null;

/** Resolves to { gpu, adapter, info } (WebGPU's globals, GPUBufferUsage and the rest, set). */
export async function benchAdapter() {
  Object.assign(globalThis, globals);
  const gpu = create(['enable-dawn-features=allow_unsafe_apis']);
  held = gpu;
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    console.log('NO ADAPTER (is VK_ICD_FILENAMES a GPU\'s Vulkan ICD?)');
    process.exit(2);
  }
  return { gpu, adapter, info: adapter.info ?? {} };
}
