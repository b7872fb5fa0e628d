// The WebGPU backend's NaN rule (README, "Limits"): WGSL lets a GPU assume no float is NaN or
// infinite, so the kernels promise nothing for such a value where a row can see it. A call whose
// visible inputs hold one runs on the CPU instead (dispatch.js route()), where the WASM rule holds:
// a row that sees a NaN is NaN, infinities as IEEE gives them. Visible: any query element; a key or
// value row that some query row may attend to (not key-padded, not after the causal diagonal, not
// masked by attnMask for every head); additive mask entries other than -Inf (which masks); every
// weight; a NaN sink (-Inf means "no sink", which the GPU handles). A key row masked for every
// query row never reaches a row on any backend (masked means absent), so it stays on the GPU.
// A call on a KV cache stored on the GPU cannot move (its keys and values are on the device): the
// GPU applies the rule itself there (webgpu/kernels/nonfinite_rows.wgsl.js), and this check is
// not asked.
import { asFloat32, firstNonFinite, halfOverflow } from '../storage/half_floats.js';
import { ENTRY, WEIGHT_MATRICES } from '../storage/state_dict_entries.js';
import { HALF_DTYPES } from '../storage/storage_types.js';
import { MaskKind } from '../base/call_plan.js';
import { isDeviceData } from '../base/gpu_tensors.js';

// Past this many non-finite key rows the call goes to the CPU without looking at each: the search
// costs L·h per row, and the CPU's answer is right either way.
const MAX_ROWS_SEARCHED = 64;

const finite = Number.isFinite;
// A GPU input (base/gpu_tensors.js) is not scanned: that would be a readback (device_calls.js).
const allFinite = (data) => isDeviceData(data) || firstNonFinite(data) < 0;

// An additive mask adds its entries to the scores: -Inf masks the key, NaN and +Inf reach the row.
function maskEntriesFinite(mask) {
  if (mask.kind !== MaskKind.additive) return true;
  for (let i = 0; i < mask.data.length; i++) if (mask.data[i] !== -Infinity && !finite(mask.data[i])) return false;
  return true;
}

const masks = (mask, i) => (mask.kind === MaskKind.boolean ? mask.data[i] !== 0 : mask.data[i] === -Infinity);

/**
 * The rows b·S + s of `data` ([B·S, width]) that hold a NaN or an infinity, up to `limit` + 1 of
 * them: one scan of the whole array, resumed after each row found.
 */
function nonFiniteRows(data, rows, limit, found) {
  if (isDeviceData(data)) return found;
  const width = data.length / rows;
  for (let i = firstNonFinite(data); i >= 0 && found.size <= limit;) {
    const r = Math.floor(i / width);
    found.add(r);
    i = firstNonFinite(data, 'float32', (r + 1) * width);
  }
  return found;
}

// Whether some query row of batch b may attend to key row s (attnMask [L, S] or [B·h, L, S]).
function keyVisible(plan, b, s) {
  const { L, S, keyPaddingMask: kpm, attnMask: am } = plan;
  if (kpm.kind !== MaskKind.none && masks(kpm, b * S + s)) return false;
  const heads = am.kind === MaskKind.none || am.shape.length === 2 ? 1 : am.shape[0] / plan.B;
  for (let l = plan.isCausal ? s : 0; l < L; l++) {
    if (am.kind === MaskKind.none) return true;
    for (let h = 0; h < heads; h++) {
      const at = am.shape.length === 2 ? l * S + s : ((b * heads + h) * L + l) * S + s;
      if (!masks(am, at)) return true;
    }
  }
  return false;
}

/** Whether a plain forward plan's inputs are finite wherever a row sees them (see the top). */
export function finiteInputs(plan) {
  if (!allFinite(plan.query) || !maskEntriesFinite(plan.keyPaddingMask) || !maskEntriesFinite(plan.attnMask)) return false;
  const rows = plan.B * plan.S;
  // Each array scanned once: the query was found finite above, and self-attention passes it three times.
  const rowsOf = (data, found) => (data === plan.query ? found : nonFiniteRows(data, rows, MAX_ROWS_SEARCHED, found));
  const keyRows = rowsOf(plan.key, new Set());
  const found = plan.value === plan.key ? keyRows : rowsOf(plan.value, keyRows);
  if (found.size > MAX_ROWS_SEARCHED) return false;
  for (const r of found) if (keyVisible(plan, Math.floor(r / plan.S), r % plan.S)) return false;
  return true;
}

/**
 * Whether checked state-dict entries ([{ name, data, dtype }]) are all finite (sinks: all but
 * -Inf) as a module of `weightsDtype` stores them: a float32 weight matrix of a 16-bit module is
 * stored rounded, and past the dtype's largest value (65504 for float16) rounds to ±Inf.
 */
export function finiteWeights(entries, weightsDtype = 'float32') {
  // A quantised entry's values are finite: its scales were checked finite and its codes are integers.
  const rounded = (name, dtype) => dtype === 'float32' && HALF_DTYPES.includes(weightsDtype) && WEIGHT_MATRICES.includes(name);
  return entries.every(({ name, data, dtype, scales }) => {
    if (scales !== undefined) return true;
    if (name === ENTRY.sinks) return !asFloat32(data, dtype).some(Number.isNaN);
    return rounded(name, dtype) ? below(data, halfOverflow(weightsDtype)) : firstNonFinite(data, dtype) < 0;
  });
}

// Whether every value of `data` (float32) is of a magnitude below `bound`: one pass that finds a
// NaN or an infinity too (a float32 matrix of a 16-bit module, stored rounded: finite as stored).
function below(data, bound) {
  for (let i = 0; i < data.length; i++) if (!(Math.abs(data[i]) < bound)) return false;
  return true;
}
