// The arithmetic of a float16 variant (`halfType`, selection/kernel_config.js's 'h' names) as
// WGSL snippets, shared by the kernels that have such variants (linear_tiled, flash_tiled):
// 'f16' is float16 itself (the program starts with `enable f16;` and needs 'shader-f16'); the tests'
// twins compile the same program on devices without the feature: 'f32' with f32 in place of f16
// (the program), 'f16-rounded' in f32 with every stored value, product and sum rounded to the
// nearest f16 (float16's error: pack2x16float rounds to nearest even). null: float32.

// f16 rounding in f32 ('f16-rounded').
const ROUND_HALF = /* wgsl */ `
fn roundHalf(x: f32) -> f32 { return unpack2x16float(pack2x16float(vec2f(x, 0.0))).x; }
fn roundHalf4(v: vec4f) -> vec4f {
  return vec4f(unpack2x16float(pack2x16float(v.xy)), unpack2x16float(pack2x16float(v.zw)));
}
// dot() in float16 arithmetic: each product and each running sum rounded.
fn dotHalf(a: vec4f, b: vec4f) -> f32 {
  let p = roundHalf4(a * b);
  return roundHalf(roundHalf(roundHalf(p.x + p.y) + p.z) + p.w);
}
`;

/** Bytes a staged tile value of `halfType` takes: 2 as f16, else 4 (f32, and the f32 twins). */
export const tileBytes = (halfType) => (halfType === 'f16' ? 2 : 4);

// The primitives of each halfType: `type`, the scalar type of stored tiles and half sums;
// `enable`, the program's first line; `helpers`, WGSL functions; `store(x)`, an f32 value as
// stored; `vec(x)`, a vec4f as a vec4 of type; `round(x, width)`, a value of width 1 or 4 as
// float16 arithmetic gives it; `add(s, x, width)`, s += x; `dot(a, b)`, a scalar of type.
function primitives(halfType) {
  if (halfType === 'f16-rounded') {
    const round = (x, width) => `${width === 4 ? 'roundHalf4' : 'roundHalf'}(${x})`;
    return {
      type: 'f32', enable: '', helpers: ROUND_HALF, store: (x) => round(x, 1), vec: (x) => round(x, 4), round,
      add: (s, x, width) => `${s} = ${round(`${s} + ${x}`, width)}`,
      dot: (a, b) => `dotHalf(${a}, ${b})`,
    };
  }
  const type = halfType ?? 'f32';
  const cast = halfType !== null && halfType !== undefined;  // float32 programs store their values as they are
  return {
    type, enable: halfType === 'f16' ? 'enable f16;' : '', helpers: '',
    store: (x) => (cast ? `${type}(${x})` : x), vec: (x) => (cast ? `vec4<${type}>(${x})` : x), round: (x) => x,
    add: (s, x) => `${s} += ${x}`, dot: (a, b) => `dot(${a}, ${b})`,
  };
}

/**
 * The snippets of `halfType` (null: float32): primitives() above, `half` (whether the kernel sums
 * in float16 slices: any halfType), and `madd(s, a, b)`, s += a·b of vec4s, the product rounded as
 * float16 arithmetic gives it.
 */
export function halfOps(halfType) {
  const ops = primitives(halfType);
  return { ...ops, half: halfType !== null && halfType !== undefined, madd: (s, a, b) => ops.add(s, ops.round(`${a} * ${b}`, 4), 4) };
}
