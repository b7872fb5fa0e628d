// The "This machine" panel (#machine-panel): the WASM module the package loaded, the threads a
// module gets, whether the page is cross-origin isolated (what the pthreads modules need) and the
// WebGPU adapter, or why there is none. Its Compare button imports compare_backends.js (and, from
// there, onnxruntime-web where it is served) only when pressed: page load stays as light as before.
// For tests, <body> gets data-machine-module, data-machine-threads, data-machine-isolated
// ('1' | '0') and data-machine-gpu ('hardware' | 'software' | 'none').
import { capabilities, loadPackage } from './loaded_package.js';
import { $, errorText } from './page.js';
import { moduleEntry } from '../src/wasm/variant.js';
import { requestAdapter } from '../src/webgpu/device.js';

let gpuProbe = null;  // the adapter probe, made once: { kind, text, adapter }

/** The WebGPU adapter of this page, through the package's own request (and software test). */
export function probeGpu() {
  gpuProbe ??= (async () => {
    const gpu = globalThis.navigator?.gpu;
    if (!gpu) {
      const why = window.isSecureContext ? 'this browser has no WebGPU' : 'WebGPU needs a secure context (https or localhost)';
      return { kind: 'none', text: `none: ${why}` };
    }
    try {
      const { adapter, software } = await requestAdapter(gpu);
      const info = adapter.info ?? {};
      const name = [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'unnamed adapter';
      return {
        kind: software ? 'software' : 'hardware',
        text: software ? `${name} (a software one: WebGPU on the CPU, no GPU speed to expect)` : name,
        adapter,
      };
    } catch (e) {
      const why = /resolved to null/.test(e.message) ? 'this browser has WebGPU but offers no adapter (no supported GPU, or WebGPU is off)' : e.message;
      return { kind: 'none', text: `none: ${why}` };
    }
  })();
  return gpuProbe;
}

const features = (entry) => [entry.simd && 'SIMD', entry.relaxed && 'relaxed SIMD', entry.threads && 'pthreads']
  .filter(Boolean).join(', ') || 'scalar';

/** Fills the facts; called once the core has loaded (it never loads the core itself). */
export async function showMachine() {
  const caps = await capabilities();
  const entry = moduleEntry(caps.wasmModule);
  // Where the page could time them, the package measured whether relaxed SIMD's fused multiply-add
  // and dot product beat the SIMD128 forms on this CPU before choosing (README: How it runs).
  const fused = caps.relaxedSimdSpeedup === null ? ''
    : `; relaxed SIMD's fused multiply-add ran ${caps.relaxedSimdSpeedup.toFixed(2)}× as fast as separate ones here, `
      + `its dot product ${caps.relaxedDotSpeedup.toFixed(2)}× as fast as widened ones`;
  $('m-module').textContent = `${caps.wasmModule} (${features(entry)})${fused}`;
  const cores = `this browser reports ${navigator.hardwareConcurrency} cores`;
  $('m-threads').textContent = entry.threads
    ? `${caps.threads} (threads sharing one memory; ${cores})`
    : `${caps.threads} (${caps.threads > 1 ? 'workers, each with its own copy of the code' : 'the page\'s own thread only'}; ${cores})`;
  $('m-isolated').textContent = crossOriginIsolated
    ? 'yes: this server sends the COOP/COEP headers, so threads can share memory'
    : 'no: this server sends no COOP/COEP headers, so threads run as separate workers';
  Object.assign(document.body.dataset, {
    machineModule: caps.wasmModule, machineThreads: String(caps.threads), machineIsolated: crossOriginIsolated ? '1' : '0',
  });
  const gpu = await probeGpu();
  $('m-gpu').textContent = gpu.text;
  document.body.dataset.machineGpu = gpu.kind;
  return { caps, gpu };
}

let comparing = false;

export function initMachineControls() {
  $('compare-controls').addEventListener('submit', async (event) => {
    event.preventDefault();
    if (comparing) return;
    comparing = true;
    $('compare-run').disabled = true;
    document.body.dataset.compareStatus = 'running';
    try {
      await loadPackage();
      const { compareBackends } = await import('./compare_backends.js');
      await compareBackends($('compare-size').value, await showMachine());
      document.body.dataset.compareStatus = 'done';
    } catch (e) {
      console.error(e);
      $('compare-status').textContent = errorText(e);
      document.body.dataset.compareStatus = 'error';
    } finally {
      comparing = false;
      $('compare-run').disabled = false;
      document.body.dataset.compareRuns = String(Number(document.body.dataset.compareRuns ?? 0) + 1);
    }
  });
}
