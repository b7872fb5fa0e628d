// The linear (Y = X·Wᵀ + b) problems of one forward, as data: which input each projection reads,
// where its weights and bias start in the module's stacked buffers, and where Q, K and V land.
// Computed before anything is encoded, so the pipelines they need (one per variant and load
// flavour, programs.js) can be awaited first and the encoding then runs without a pause.
//
// Q, K, V land as [rows, width] with head h at columns h·d; K and V have G = numKvHeads heads
// (grouped-query attention: the attention kernels index them). Self-attention (query, key and
// value one array) is one product with the stacked [W_q; W_k; W_v]; key and value one array, one
// product with [W_k; W_v]. Each problem carries the module's weightsDtype (`weights`, which its
// pipeline compiles in) and, for int8 weights, where its matrix's scales start (weight_storage.js).
import { scaleOffsets } from './weight_storage.js';
import { isAttentionOnly } from '../base/attention_only.js';
import { keptPer } from './kept_values.js';

/**
 * { input: [{ input, out, floats, problem }] (input: 'query' | 'key' | 'value'; out: the role of
 * the output buffer; floats: its size; problem: LINEAR_PARAMS values), q, k, v:
 * { role, off, stride }, output: { floats, problem } } for plan (B, L, S, query, key, value) and config.
 * The same object for the calls of one module with the same sizes and inputs shared alike (a
 * decode step's layers, token after token): call_kernels.js keeps a call's kernels, whose linear
 * pipelines are looked up by problem, for the calls like it. Read only.
 */
export function linearProblems(plan, config) {
  const sharing = inputSharing(plan, config);
  return kept.get(config, `${plan.B}|${plan.L}|${plan.S}|${sharing}`, () => problemsOf(plan, config, sharing));
}

const kept = keptPer(16);  // per module config: a few shapes of calls (a prefill, a decode step)

// Which products a call's inputs make: 'none' (attention only: api/attention_engines.js), 'query'
// (an encoded cache's step: gpu_encode.js), 'qkv' (query, key and value one array), 'kv' or
// 'q+kv' (key and value one array; no query: an encoded cache's filling), 'k+v' or 'q+k+v'.
function inputSharing(plan, config) {
  const { embedDim: E, kdim, vdim } = config;
  if (isAttentionOnly(config)) return 'none';
  if (plan.key === null) return 'query';
  if (plan.query === plan.key && plan.key === plan.value && kdim === E && vdim === E) return 'qkv';
  const q = plan.query === null ? '' : 'q+';
  return plan.key === plan.value && kdim === vdim ? `${q}kv` : `${q}k+v`;
}

function problemsOf(plan, config, sharing) {
  const { B, L, S } = plan;
  const { embedDim: E, kdim, vdim, numHeads: H, numKvHeads: G, headDim: dk, valueHeadDim: dv } = config;
  const Hdk = H * dk;
  const Gdk = G * dk;
  const Gdv = G * dv;
  const wOffK = Hdk * E;
  const wOffV = wOffK + Gdk * kdim;
  const weights = config.weightsDtype ?? 'float32';
  const scales = scaleOffsets(config);
  const project = (input, out, rows, width, inDim, wOff, bOff) => ({
    input,
    out,
    floats: rows * width,
    problem: {
      M: rows, N: width, K: inDim, xStride: inDim, wOff, bOff, yStride: width, weights,
      sOff: wOff === 0 ? scales.q : wOff === wOffK ? scales.k : scales.v,
    },
  });
  const at = (role, off, stride) => ({ role, off, stride });
  // Attention only: the inputs are Q, K and V (forward_encode.js).
  if (sharing === 'none') return { input: [], q: null, k: null, v: null, output: null };
  const output = { floats: B * L * E, problem: { M: B * L, N: E, K: H * dv, xStride: H * dv, yStride: E, weights, sOff: 0 } };
  // An encoded cache's step projects the query alone (its keys and values are the cache's), its
  // filling key and value alone (no query).
  if (sharing === 'query') return { input: [project('query', 'q', B * L, Hdk, E, 0, 0)], q: at('q', 0, Hdk), k: null, v: null, output };
  if (sharing === 'qkv') {
    const width = Hdk + Gdk + Gdv;
    return {
      input: [project('query', 'qkv', B * L, width, E, 0, 0)],
      q: at('qkv', 0, width), k: at('qkv', Hdk, width), v: at('qkv', Hdk + Gdk, width), output,
    };
  }
  const q = plan.query === null ? [] : [project('query', 'q', B * L, Hdk, E, 0, 0)];
  const qAt = plan.query === null ? null : at('q', 0, Hdk);
  if (sharing.endsWith('kv')) {
    const width = Gdk + Gdv;
    return {
      input: [...q, project('key', 'kv', B * S, width, kdim, wOffK, Hdk)],
      q: qAt, k: at('kv', 0, width), v: at('kv', Gdk, width), output,
    };
  }
  return {
    input: [...q, project('key', 'k', B * S, Gdk, kdim, wOffK, Hdk), project('value', 'v', B * S, Gdv, vdim, wOffV, Hdk + Gdk)],
    q: qAt, k: at('k', 0, Gdk), v: at('v', 0, Gdv), output,
  };
}
