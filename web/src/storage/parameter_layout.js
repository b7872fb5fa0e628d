// The parameter layout of a module, the one JS statement of it: which buffer each state-dict
// entry goes to and where, and how many floats each buffer holds. The WASM core keeps the same
// four buffers (cpp/src/mha_weights.cpp); the WebGPU executor allocates and fills its GPU
// buffers from this; the module config checks the total against the WASM heap.
import { ENTRY } from './state_dict_entries.js';

/**
 * For a resolved config: `buffers` { win, bin, wout, bout } → floats ([W_q; W_k; W_v] rows
 * stacked as in_proj_weight: [h·d_k, E], [h_kv·d_k, kdim], [h_kv·d_v, vdim]; their biases;
 * out_proj.weight [E, h·d_v]; out_proj.bias [E]), and `entries`, each state-dict name → [buffer,
 * offset in floats]. Buffers exist with or without bias (then they stay zero).
 */
export function parameterLayout({ embedDim: E, numHeads: H, numKvHeads: G, kdim, vdim, headDim: dk, valueHeadDim: dv }) {
  const q = H * dk * E, k = G * dk * kdim, v = G * dv * vdim;
  return {
    buffers: { win: q + k + v, bin: H * dk + G * dk + G * dv, wout: E * H * dv, bout: E, sinks: H, qNorm: dk, kNorm: dk },
    entries: {
      [ENTRY.inProjWeight]: ['win', 0],
      [ENTRY.qProjWeight]: ['win', 0],
      [ENTRY.kProjWeight]: ['win', q],
      [ENTRY.vProjWeight]: ['win', q + k],
      [ENTRY.inProjBias]: ['bin', 0],
      // A module whose q, k and v do not all have a bias takes one entry per projection that does.
      [ENTRY.qProjBias]: ['bin', 0],
      [ENTRY.kProjBias]: ['bin', H * dk],
      [ENTRY.vProjBias]: ['bin', H * dk + G * dk],
      [ENTRY.outProjWeight]: ['wout', 0],
      [ENTRY.outProjBias]: ['bout', 0],
      [ENTRY.qNormWeight]: ['qNorm', 0],  // the qk-norm's weights [d_k]
      [ENTRY.kNormWeight]: ['kNorm', 0],
      [ENTRY.sinks]: ['sinks', 0],  // attention sinks: one logit per query head
    },
  };
}

/** Floats of a module's weights and biases (bias or not: the buffers exist either way). */
export function parameterFloats(config) {
  return Object.values(parameterLayout(config).buffers).reduce((a, b) => a + b, 0);
}
