// Relaxed SIMD's integer dot products on known values, in whatever engine (and tier) runs this:
// i16x8.relaxed_dot_i8x16_i7x16_s, which the relaxed modules' int4 × int8-activations kernel uses
// (cpp/src/kernels/simd128/relaxed_dot_simd128.h), and the accumulating
// i32x4.relaxed_dot_i8x16_i7x16_add_s, which no kernel uses (Node 20's Liftoff computes it wrongly
// for some register choices: docs/attention-math/storage.md §11). Operands at the extremes the kernels may
// give: the signed one in −127…127, the other in 0…127 (where every engine must be exact).
//
// The module, from this text (wabt 1.0.32: wat2wasm --enable-relaxed-simd, its names for them):
//   (module (memory (export "memory") 1)
//     (func (export "dot") (v128.store (i32.const 48)
//       (i16x8.dot_i8x16_i7x16_s (v128.load (i32.const 0)) (v128.load (i32.const 16)))))
//     (func (export "dot_add") (v128.store (i32.const 48)
//       (i32x4.dot_i8x16_i7x16_add_s (v128.load (i32.const 0)) (v128.load (i32.const 16)) (v128.load (i32.const 32))))))
const MODULE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 3, 2, 0, 0, 5, 3, 1, 0, 1, 7, 26, 3, 6, 109, 101, 109, 111, 114, 121, 2, 0,
  3, 100, 111, 116, 0, 0, 7, 100, 111, 116, 95, 97, 100, 100, 0, 1, 10, 55, 2, 23, 0, 65, 48, 65, 0, 253, 0, 4, 0, 65, 16, 253,
  0, 4, 0, 253, 146, 2, 253, 11, 4, 0, 11, 29, 0, 65, 48, 65, 0, 253, 0, 4, 0, 65, 16, 253, 0, 4, 0, 65, 32, 253, 0, 4, 0, 253,
  147, 2, 253, 11, 4, 0, 11,
]);

const A = [-127, 127, -1, 1, 100, -100, 0, 127, -127, 127, 5, -7, 64, -64, 33, -33];
const B = [127, 127, 0, 1, 127, 126, 9, 1, 127, 127, 15, 3, 64, 65, 2, 100];
const C = [1000, -70000, 3, 2000000000];

/**
 * Runs both instructions `calls` times (enough calls, and an engine swaps in its optimising
 * tier); resolves to { dot, dotAdd }: for each, true where every call gave the exact sums, else
 * the first wrong lanes. null where the engine has no relaxed SIMD.
 */
export function relaxedDotResults(calls = 1) {
  if (!WebAssembly.validate(MODULE)) return null;
  const { memory, dot, dot_add: dotAdd } = new WebAssembly.Instance(new WebAssembly.Module(MODULE), {}).exports;
  const bytes = new Uint8Array(memory.buffer);
  bytes.set(new Uint8Array(Int8Array.from(A).buffer), 0);
  bytes.set(B, 16);
  bytes.set(new Uint8Array(Int32Array.from(C).buffer), 32);
  const dotWant = Array.from({ length: 8 }, (_, i) => A[2 * i] * B[2 * i] + A[2 * i + 1] * B[2 * i + 1]);
  const addWant = C.map((c, i) => c + [0, 1, 2, 3].reduce((s, j) => s + A[4 * i + j] * B[4 * i + j], 0));
  const check = (f, View, lanes, want) => {
    for (let n = 0; n < calls; n++) {
      f();
      const got = Array.from(new View(memory.buffer, 48, lanes));
      if (got.some((g, i) => g !== want[i])) return got;
    }
    return true;
  };
  return { dot: check(dot, Int16Array, 8, dotWant), dotAdd: check(dotAdd, Int32Array, 4, addWant) };
}
