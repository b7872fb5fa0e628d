// Every WGSL program the WebGPU backend makes, through naga's validator (the npm naga-wasm, wgpu's
// shader compiler): the programs SwiftShader cannot compile here are checked too, the float16
// variants (no 'shader-f16' on SwiftShader) among them. Each family's programs are made for the
// problems that change their WGSL (load flavours, weights and cache dtypes, head widths). naga
// does not take `enable subgroups;` yet but knows the subgroup builtins, so that line is dropped
// first. A program naga rejects fails with its report. No GPU needed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWgsl, validate } from 'naga-wasm';
import { KERNELS, VARIANTS } from '../../web/src/webgpu/programs.js';
import { CACHE_DTYPES, WEIGHTS_DTYPES } from '../../web/src/storage/storage_types.js';

const narrowCaches = CACHE_DTYPES.filter((d) => d !== 'float32');
const heads = [{ dk: 64, dv: 64 }, { dk: 12, dv: 20 }].flatMap((h) => [h, ...narrowCaches.map((kv) => ({ ...h, kv }))]);
// K 8: every narrow row on words and vec4 loads; K 12: 16-bit rows on words, int4 not; K 7: values.
const linearProblems = WEIGHTS_DTYPES.flatMap((weights) => [8, 12, 7].map((K) => ({ M: 70, N: 24, K, xOff: 0, xStride: K, wOff: 0, weights })));
const problems = {
  linear: linearProblems,
  attention: heads,
  decode: heads,
  q8linear: ['int8', 'int4'].flatMap((dtype) => ['dot4', 'loop'].map((dot) => ({ dtype, dot }))),
  q8rows: [{}],
};
const kernelProblems = {
  cacheAppendNarrow: narrowCaches.map((dtype) => ({ dtype })),
  weights: [{ dk: 64 }, ...narrowCaches.map((dtype) => ({ dk: 12, dtype }))],
  cacheFlags: CACHE_DTYPES.map((dtype) => ({ dk: 12, dv: 20, dtype })),
  nonFiniteRows: CACHE_DTYPES.flatMap((dtype) => [false, true].map((rows) => ({ dk: 12, dv: 20, dtype, rows }))),
};

function assertValid(code, what) {
  try {
    validate(parseWgsl(code.replace(/^enable subgroups;$/m, '')));
  } catch (error) {
    assert.fail(`${what}: naga rejects it (${error.kind}): ${error.formatted ?? error.message}`);
  }
}

describe('every WGSL program passes naga\'s validator', () => {
  for (const [family, variants] of Object.entries(VARIANTS)) {
    test(`${family}: ${Object.keys(variants).join(', ')}`, () => {
      for (const variant of Object.values(variants)) {
        for (const problem of problems[family]) {
          assertValid(variant.shader(problem), `${family} ${variant.name} ${JSON.stringify(problem)}`);
          if (variant.reduce) assertValid(variant.reduce.shader(problem), `${family} ${variant.name}'s reduce`);
        }
      }
    });
  }
  test(`the kernels without variants: ${Object.keys(KERNELS).join(', ')}`, () => {
    for (const [name, kernel] of Object.entries(KERNELS)) {
      for (const problem of kernelProblems[name] ?? [{}]) assertValid(kernel.shader(problem), `${name} ${JSON.stringify(problem)}`);
    }
  });
  test('a wrong program fails: an f16 value stored to an f32 array without a conversion', () => {
    const code = VARIANTS.linear.h64x64k16.shader(linearProblems[0]);
    const wrong = code.replace('vec4f(part[s])', 'part[s]');
    assert.notEqual(wrong, code, 'the float16 kernel changed: find another place to break it');
    assert.throws(() => assertValid(wrong, 'the broken one'), /naga rejects it/);
  });
});
