// The one tolerance of every parity check (PyTorch fixtures, GPU vs WASM): an element passes when
// |actual − expected| <= ATOL + RTOL·|expected|. float32 kernels that sum in another order than
// PyTorch stay inside it (worst seen 1.5e-5 abs, the large_logits fixture); a wrong mask or
// scale does not.

export const ATOL = 1e-4;
export const RTOL = 1e-4;

/** Whether two arrays hold the same values bit for bit (NaN equals NaN; -0 is not 0). */
export const sameBits = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

/**
 * Compares { data, shape } tensors; never throws. An expected tensor may carry `slack`, a
 * Float64Array added to each element's bound (int8 activations of computed inputs: reference.mjs). Returns { ok, ratio, abs,
 * detail }, ratio = the largest |a − b| / (ATOL + RTOL·|b|) (ok when <= 1; Infinity for a missing
 * tensor, another shape, or a non-finite actual value where a finite one is expected), abs = the largest |a − b|, detail = a
 * line for a failure message.
 */
export function compare(actual, expected) {
  const fail = (detail) => ({ ok: false, ratio: Infinity, abs: Infinity, detail });
  if (!actual) return fail(`missing (got ${actual})`);
  if (JSON.stringify(actual.shape) !== JSON.stringify(expected.shape) || actual.data.length !== expected.data.length) {
    return fail(`shape ${JSON.stringify(actual.shape)}, expected ${JSON.stringify(expected.shape)}`);
  }
  let ratio = 0;
  let abs = 0;
  let worst = 0;
  for (let i = 0; i < expected.data.length; i++) {
    const a = actual.data[i];
    const b = expected.data[i];
    // A non-finite expected value (the randomized cases' NaN rows) must come out exactly so.
    if (!Number.isFinite(b)) {
      if (Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b))) continue;
      return fail(`[${i}]: got ${a}, expected ${b}`);
    }
    if (!Number.isFinite(a)) return fail(`[${i}]: got ${a}, expected ${b}`);
    const err = Math.abs(a - b);
    abs = Math.max(abs, err);
    const r = err / (ATOL + RTOL * Math.abs(b) + (expected.slack ? expected.slack[i] : 0));
    if (r > ratio) { ratio = r; worst = i; }
  }
  const ok = ratio <= 1;
  const at = ok ? '' : `, outside ${ATOL} + ${RTOL}·|expected| (worst at [${worst}]: got ${actual.data[worst]}, expected ${expected.data[worst]})`;
  return { ok, ratio, abs, detail: `max |err| ${abs.toExponential(2)}${at}` };
}

/**
 * A forward()'s result against a decoded case's expected values: output always; attnWeights
 * compared where the case expects them, else it must be null (the API's 'not asked for'). Returns { ok,
 * output, attnWeights (compare() results), ratio (the worse of the two), detail }.
 */
export function checkResult(c, result) {
  const output = compare(result?.output, c.expected.output);
  const got = result?.attnWeights;
  const attnWeights = c.expected.attnWeights
    ? compare(got, c.expected.attnWeights)
    : { ok: got === null, ratio: got === null ? 0 : Infinity, abs: 0, detail: got === null ? 'null as expected' : `expected null (not requested), got ${got === undefined ? 'undefined' : 'a tensor'}` };
  return {
    ok: output.ok && attnWeights.ok,
    output,
    attnWeights,
    ratio: Math.max(output.ratio, attnWeights.ratio),
    detail: `${c.name}: output ${output.detail}; attnWeights ${attnWeights.detail}`,
  };
}
