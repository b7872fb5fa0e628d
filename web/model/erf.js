// erf(x) in float64, accurate to a few units in the last place: the model's GELU is the exact
// z·½(1 + erf(z/√2)) and its logits must match PyTorch's to 1e-4, which short polynomial fits
// (Abramowitz–Stegun 7.1.26, error 1.5e-7) do not promise once 2 × 512 of them feed a layer.
//
// Two expansions with no cancellation, each used where it converges quickly:
//   |x| < 3:  erf(x) = 2/√π · e^(−x²) · Σₙ 2ⁿ x^(2n+1) / (1·3·5⋯(2n+1))    (all terms positive)
//   |x| ≥ 3:  erfc(x) = e^(−x²)/√π · 1/(x + ½/(x + 1/(x + (3/2)/(x + 2/(x + ⋯)))))
// the continued fraction evaluated bottom-up from a fixed depth (enough for x ≥ 3 to converge
// to the last bit; tests/js/char_gpt_parts.test.js checks both against Python's math.erf).

const TWO_OVER_SQRT_PI = 1.1283791670955126;
const ONE_OVER_SQRT_PI = 0.5641895835477563;
const SERIES_LIMIT = 3;
const FRACTION_DEPTH = 60;

/** Σ 2ⁿ x^(2n+1)/(2n+1)!! until the terms no longer change the sum. */
function series(x) {
  const x2 = x * x;
  let term = x;
  let sum = x;
  for (let n = 1; term > sum * 1e-17; n++) {
    term *= (2 * x2) / (2 * n + 1);
    sum += term;
  }
  return TWO_OVER_SQRT_PI * Math.exp(-x2) * sum;
}

/** erfc(x) for x ≥ SERIES_LIMIT by the continued fraction. */
function erfcFraction(x) {
  let t = x;
  for (let n = FRACTION_DEPTH; n >= 1; n--) t = x + n / 2 / t;
  return (ONE_OVER_SQRT_PI * Math.exp(-x * x)) / t;
}

export function erf(x) {
  if (Number.isNaN(x)) return NaN;
  const a = Math.abs(x);
  const value = a < SERIES_LIMIT ? series(a) : 1 - erfcFraction(a);
  return x < 0 ? -value : value;
}
