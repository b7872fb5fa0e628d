// The state-dict entries a module may expect: PyTorch's names (nn.MultiheadAttention's, and beyond
// it the qk-norm weights and the attention sinks), in state_dict() order. The one list of them in
// JS; the core's (cpp/include/webattention/state_dict_entries.h) is the same, as
// tests/js/state_dict_entries.test.js checks through the binding's stateDictEntryNames(). Which of
// them a given module expects is the core's parameterSpecs().

/** Each entry's name, by a JS identifier. */
export const ENTRY = Object.freeze({
  inProjWeight: 'in_proj_weight',
  qProjWeight: 'q_proj_weight',
  kProjWeight: 'k_proj_weight',
  vProjWeight: 'v_proj_weight',
  inProjBias: 'in_proj_bias',
  qProjBias: 'q_proj_bias',
  kProjBias: 'k_proj_bias',
  vProjBias: 'v_proj_bias',
  outProjWeight: 'out_proj.weight',
  outProjBias: 'out_proj.bias',
  qNormWeight: 'q_norm.weight',
  kNormWeight: 'k_norm.weight',
  sinks: 'sinks',
});

/** Every entry name, in state_dict() order. */
export const ENTRY_NAMES = Object.freeze(Object.values(ENTRY));

/**
 * The weight matrices: what a module of a narrow weightsDtype stores narrow (rounded to 16 bits,
 * or quantised); the other entries (biases, norm weights, sinks) are float32 in every module.
 */
export const WEIGHT_MATRICES = Object.freeze([ENTRY.inProjWeight, ENTRY.qProjWeight, ENTRY.kProjWeight, ENTRY.vProjWeight,
  ENTRY.outProjWeight]);
