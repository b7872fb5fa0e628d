// The parameter layout of a module, the one JS statement of it: which buffer each state-dict
// entry goes to and where, and how many floats each buffer holds. The WASM core keeps the same
// four buffers (cpp/src/mha_weights.cpp); the WebGPU executor allocates and fills its GPU
// buffers from this; the module config checks the total against the WASM heap.

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
      in_proj_weight: ['win', 0],
      q_proj_weight: ['win', 0],
      k_proj_weight: ['win', q],
      v_proj_weight: ['win', q + k],
      in_proj_bias: ['bin', 0],
      // A module whose q, k and v do not all have a bias takes one entry per projection that does.
      q_proj_bias: ['bin', 0],
      k_proj_bias: ['bin', H * dk],
      v_proj_bias: ['bin', H * dk + G * dk],
      'out_proj.weight': ['wout', 0],
      'out_proj.bias': ['bout', 0],
      sinks: ['sinks', 0],  // attention sinks: one logit per query head
      'q_norm.weight': ['qNorm', 0],  // the qk-norm's weights [d_k]
      'k_norm.weight': ['kNorm', 0],
    },
  };
}

/** Floats of a module's weights and biases (bias or not: the buffers exist either way). */
export function parameterFloats(config) {
  return Object.values(parameterLayout(config).buffers).reduce((a, b) => a + b, 0);
}
