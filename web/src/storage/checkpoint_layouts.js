// Checkpoint namings other than PyTorch's nn.MultiheadAttention: loadStateDict(sd, { layout })
// with 'hf' (Llama, Mistral, Qwen, Gemma, Phi-3), 'gpt2', 'bert' or 'gguf' (llama.cpp's names,
// prefix 'blk.N.'). Each layout is a list of the
// keys it knows; a key gives one or more of the module's parts (the q/k/v/out weights and
// biases), stacked along the output rows, or for GPT-2's Conv1D stored transposed ([in, out]),
// of the module's own entries (its parameterSpecs(): in_proj_weight or q/k/v_proj_weight,
// in_proj_bias or q/k/v_proj_bias, out_proj.*).
// Here the layouts' keys, which every load asks about (otherLayoutHint()); how a state dict in one
// is mapped, layout_resolution.js, is reached only for a layout other than 'torch'
// (base/lazy_modules.js: not parsed by a cold start's import).
import { ENTRY_NAMES } from './state_dict_entries.js';

/** Every layout loadStateDict() takes; 'torch' is state_dict.js's own path. */
export const LAYOUTS = ['torch', 'hf', 'gpt2', 'bert', 'gguf'];

/** The parts the three input projections' weights and biases are, in their order. */
export const QKV_WEIGHTS = ['q.weight', 'k.weight', 'v.weight'];
export const QKV_BIASES = ['q.bias', 'k.bias', 'v.bias'];
const weights = QKV_WEIGHTS;
const biases = QKV_BIASES;

/**
 * The four projections' own keys in a layout that names them q, k, v and out: their weights, then
 * their biases, as '<name>.weight' and '<name>.bias'.
 */
function projectionKeys(...names) {
  const parts = ['q', 'k', 'v', 'out'];
  return ['weight', 'bias'].flatMap((kind) => names.map((name, i) => ({ name: `${name}.${kind}`, parts: [`${parts[i]}.${kind}`] })));
}

/**
 * Each layout's keys: { name, parts, conv1d? } (a module without one of the parts refuses the
 * key, naming the option that would give it).
 */
export const LAYOUT_KEYS = {
  hf: [
    ...projectionKeys('q_proj', 'k_proj', 'v_proj', 'o_proj'),
    // Phi-3 packs the three input projections.
    { name: 'qkv_proj.weight', parts: weights }, { name: 'qkv_proj.bias', parts: biases },
    // gpt-oss: a logit per query head in its softmax's denominator.
    { name: 'sinks', parts: ['sinks'] },
    // Qwen3 and Gemma 3: a per-head RMSNorm of q and k before RoPE.
    { name: 'q_norm.weight', parts: ['q_norm'] }, { name: 'k_norm.weight', parts: ['k_norm'] },
  ],
  // GPT-2's Conv1D keeps its weight as [in, out]: the transpose of nn.Linear's.
  gpt2: [
    { name: 'c_attn.weight', parts: weights, conv1d: true }, { name: 'c_attn.bias', parts: biases },
    { name: 'c_proj.weight', parts: ['out.weight'], conv1d: true }, { name: 'c_proj.bias', parts: ['out.bias'] },
  ],
  // BERT's attention block: prefix '...attention.' ('bert.encoder.layer.0.attention.').
  bert: projectionKeys('self.query', 'self.key', 'self.value', 'output.dense'),
  // llama.cpp's GGUF names (its convert_hf_to_gguf.py), a layer's under 'blk.N.'. Q and K rows as
  // stored: for the llama architecture, each head's rows permuted for llama.cpp's rotary pairs of
  // adjacent dims (fromGguf() creates the module with rotary.interleaved for them).
  gguf: [
    ...projectionKeys('attn_q', 'attn_k', 'attn_v', 'attn_output'),
    { name: 'attn_qkv.weight', parts: weights }, { name: 'attn_qkv.bias', parts: biases },
    { name: 'attn_q_norm.weight', parts: ['q_norm'] }, { name: 'attn_k_norm.weight', parts: ['k_norm'] },
    { name: 'attn_sinks.weight', parts: ['sinks'] },
  ],
};

/**
 * Keys a layout passes over, even with strict: a GGUF file is a whole model, so its tensors outside
 * the prefix's layer, and the layer's tensors that are not attention's (its norms, feed-forward),
 * are the rest of the model. (local: the key without the prefix, or null outside it.)
 */
export const PASSED_OVER = {
  gguf: (local) => local === null || !local.startsWith('attn_') || /^attn_(norm|norm_2|post_norm)\./.test(local),
};

/** ' (a 'hf' key: loadStateDict(sd, { layout: 'hf' }))' when another layout knows `local`, else ''. */
export function otherLayoutHint(local, layout) {
  const other = LAYOUTS.find((l) => l !== layout && (l === 'torch' ? ENTRY_NAMES : LAYOUT_KEYS[l].map((k) => k.name)).includes(local));
  return other ? ` (a '${other}' key: loadStateDict(sd, { layout: '${other}' }))` : '';
}
