// scaledDotProductAttention() on the core, on the calling thread: the public call's WASM path
// (api.js) and the WASM executor of an attention-only Dispatcher (api/attention_engines.js).
import { coreSdpa } from './core_binding.js';
import { throwCoreError } from '../base/errors.js';
import { maskArgs, outTarget, readFloats, readOutput, withHeap } from './heap_calls.js';

/** plan: from resolveSdpa(). Returns { output, weights }. */
export function wasmSdpa(core, plan) {
  const { B: N, L, S, dk, dv, attnMask } = plan;
  const outFloats = N * L * dv;
  const weightFloats = plan.needWeights ? N * L * S : 0;
  const target = outTarget(plan);
  return withHeap(core, [
    { data: plan.query }, { data: plan.key }, { data: plan.value }, { data: attnMask.data },
    { floats: outFloats }, { floats: weightFloats },
  ], ([q, k, v, mask, output, weights]) => {
    const error = coreSdpa(core, {
      N, L, S, dk, dv, q, k, v, attnMask: maskArgs(attnMask, mask),
      isCausal: plan.isCausal, hasScale: plan.scale !== undefined, scale: plan.scale ?? 0, output, weights,
    });
    if (error) throwCoreError(error);
    return {
      output: readOutput(core, output, outFloats, target),
      weights: weightFloats ? readFloats(core, weights, weightFloats) : null,
    };
  });
}

/**
 * The WASM executor of an attention-only Dispatcher (api/attention_engines.js): its calls are
 * scaledDotProductAttention() plans, computed by the core's SDPA on the calling thread; no weights.
 */
export class WasmSdpaExecutor {
  complete = true;  // nothing to load
  threads = 1;
  #core;

  constructor(core) {
    this.#core = core;
  }

  forward(plan) {
    return wasmSdpa(this.#core, plan);
  }

  dispose() {}
}
