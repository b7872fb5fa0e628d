// A module's GPU slot (dispatch.js's #gpu): which executor it has, if any, and the two things that
// change that — an 'auto' module asking for the GPU at its first large call, and the failure policy
// of a GPU call (dispatch.js's top comment states it).

/**
 * The slot of a Dispatcher made with gpu (null, { executor } or { acquire }; dispatch.js's
 * constructor says which is which), or null. state: 'pending' (not asked for yet) | 'ready' |
 * 'none' ('auto' found nothing to use).
 */
export function gpuSlot(gpu, minFlops, measureThreshold) {
  return gpu && {
    state: gpu.acquire ? 'pending' : 'ready', executor: gpu.executor ?? null, acquire: gpu.acquire ?? null,
    acquiring: null, pendingEntries: null, minFlops, measureThreshold, warned: false,
  };
}

/** Backend 'auto', first large call: asks for the GPU once (concurrent calls share the asking). */
export function acquireGpu(gpu, disposed) {
  gpu.acquiring ??= (async () => {
    let executor = null;
    try {
      executor = await gpu.acquire();
    } catch {
      executor = null;  // 'auto' never fails over WebGPU: WASM it is
    }
    if (disposed() || gpu.state !== 'pending') {
      executor?.dispose();
      return;
    }
    gpu.state = executor ? 'ready' : 'none';
    gpu.executor = executor;
    if (executor && gpu.pendingEntries) executor.loadStateDict(gpu.pendingEntries);
    gpu.pendingEntries = null;
  })();
  return gpu.acquiring;
}

/**
 * The failure policy of a GPU call that threw `error` (ranOnCpu: the call then ran on the CPU;
 * hostWeights false: the module has no weights on the CPU, so its calls are refused from now on).
 */
export async function gpuFailed(gpu, error, ranOnCpu = true, hostWeights = true) {
  const { executor } = gpu;
  // A lost device reports through device.lost, which may settle a moment after the failed
  // call: give it that moment before deciding.
  await executor.settleLoss();
  if (executor.lost) {
    const { reason, message } = executor.lost;
    console.warn(`webattention: the WebGPU device was lost (${reason}${message ? `: ${message}` : ''}); `
      + (hostWeights ? 'this module computes on WASM from now on (mha.backend is \'wasm\')'
        : 'this module kept its weights on the GPU only (hostWeights: false): its calls are refused from now on'));
    executor.dispose();
  } else if (ranOnCpu && !gpu.warned) {
    gpu.warned = true;
    console.warn(`webattention: a WebGPU forward() failed (${error?.message ?? error}); that call ran on WASM`);
  }
}
