// WGSL: the int8 quantisers' two divisions as the WASM core rounds them (storage_convert.h), for
// the activation rows (q8_rows.wgsl.js) and an int8 KV cache's append (cache_narrow.wgsl.js). WGSL's
// f32 division may be off by 2.5 ULP (SwiftShader's is not correctly rounded), and the codes of
// values at or near a rounding midpoint, which quantised inputs often are (an int8 projection's
// outputs are multiples of a few steps), then came out one step off the core's. So:
//   over127(a)            fl(a / 127), correctly rounded, in integer arithmetic;
//   quotientCode(x, d, away)  round(fl(x / d)) clamped to ±127, halves away from zero (`away`,
//                         the activations' std::round) or to even (the cache's std::nearbyint):
//                         WGSL's division gives a guess within one step, which an exact test of
//                         fl(|x| / d) against the midpoint corrects.
// Where d is subnormal (a block's max below 2^-119) the tests are not exact: WGSL's division stands.
export const q8DivisionWgsl = `
// fl(a / 127) for finite a >= 0: a = M·2^(E−150), so the quotient's 24-bit significand is
// (M·2^s) / 127 for s 7 or 6, rounded to nearest by the remainder (127 is odd: no ties).
fn over127(a: f32) -> f32 {
  let bits = bitcast<u32>(a);
  let e = bits >> 23u;
  let m = (bits & 0x7fffffu) | 0x800000u;
  let s = select(6u, 7u, m < 127u * 0x20000u);
  let n = m << s;
  var q = n / 127u;
  if (2u * (n % 127u) > 127u) { q += 1u; }
  let carry = select(0u, 1u, q == 0x1000000u);
  let biased = i32(e) - i32(s) + i32(carry);
  if (e == 0u || biased < 1) { return a / 127.0; }
  return bitcast<f32>((u32(biased) << 23u) | ((q >> carry) & 0x7fffffu));
}

// The sign of |x| − (m + side·u)·d, exactly, for m = c + 0.5 (c in 0…126), u the spacing of f32
// around m (below m for m = 0.5) and side ±0.5: a correctly rounded quotient reaches m from
// m − u/2 on and passes it beyond m + u/2 (both ties go to m: its significand is even). d is
// split into halves of 12 significant bits, so every product is exact, and each sum is exact
// where the sign is in doubt (elsewhere rounding keeps the sign).
fn pastEdge(ax: f32, d: f32, m: f32, side: f32) -> f32 {
  let hi = bitcast<f32>(bitcast<u32>(d) & 0xfffff000u);
  let lo = d - hi;
  let u = bitcast<f32>(((bitcast<u32>(m) >> 23u) - select(23u, 24u, m == 0.5)) << 23u);
  return (ax - m * hi) - m * lo - (side * u) * d;
}

// Whether fl(ax / d) rounds to c + 1 rather than c: beyond the midpoint, or on it when ties go up.
fn roundsUp(ax: f32, d: f32, c: f32, tieUp: bool) -> bool {
  if (tieUp) { return pastEdge(ax, d, c + 0.5, -0.5) >= 0.0; }
  return pastEdge(ax, d, c + 0.5, 0.5) > 0.0;
}

fn quotientCode(x: f32, d: f32, away: bool) -> i32 {
  let ax = abs(x);
  var c = min(floor(ax / d + 0.5), 127.0);
  if (c < 127.0 && roundsUp(ax, d, c, away || c % 2.0 == 1.0)) {
    c += 1.0;
  } else if (c > 0.0 && !roundsUp(ax, d, c - 1.0, away || c % 2.0 == 0.0)) {
    c -= 1.0;
  }
  return select(i32(c), -i32(c), x < 0.0);
}
`;
