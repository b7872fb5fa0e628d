// Every WGSL program the WebGPU backend makes, through naga's validator (the npm naga-wasm, wgpu's
// shader compiler): the programs SwiftShader cannot compile here are checked too, the float16
// variants (no 'shader-f16' on SwiftShader) among them. Each family's programs are made for the
// problems that change their WGSL (load flavours, weights and cache dtypes, head widths). naga
// does not take `enable subgroups;` yet but knows the subgroup builtins, so that line is dropped
// first. A program naga rejects fails with its report. Each program is also read for a var that
// a loop declares without an initialiser and reads before storing to it (stalePassVars()). No GPU
// needed.
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
  cacheAppend: CACHE_DTYPES.flatMap((dtype) => [{ dk: 12, dv: 20, dtype, heads: 3 }, { dk: 1, dv: 300, dtype, heads: 1 }, ...['rope', 'norm', 'norm+rope'].map((prepare) => ({ dk: 12, dv: 20, dtype, heads: 2, qHeads: 6, prepare }))]),
  weights: [{ dk: 64 }, ...narrowCaches.map((dtype) => ({ dk: 12, dtype }))],
  nonFiniteRows: CACHE_DTYPES.flatMap((dtype) => [false, true].map((rows) => ({ dk: 12, dv: 20, dtype, heads: rows ? 2 : 40, rows }))),
};

// Dawn's SPIR-V path on SwiftShader does not zero a var declared without an initialiser inside a
// loop on each pass, as WGSL says it should: it keeps the last pass's value (a 4-pass loop of
// `var x: f32; x += 1.0;` stored 1, 2, 3, 4). The names of such vars whose first use is not a
// plain store (a read, or a compound assignment such as +=): each must be declared with an
// initialiser (`var x = f32();`) or before the loop.
function stalePassVars(code) {
  const found = [];
  let depth = 0;
  const lines = code.split('\n');
  lines.forEach((line, at) => {
    const declared = depth >= 2 && line.match(/^\s*var ([A-Za-z_]\w*)\s*:[^=;]*;/);
    if (declared) {
      const rest = lines.slice(at + 1).join('\n');
      const use = rest.match(new RegExp(`\\b${declared[1]}\\b((?:\\[[^\\]]*\\])*)\\s*(\\S\\S?)`));
      if (!use || use[2] !== '=' && !use[2].startsWith('= ')) found.push(declared[1]);
    }
    depth += (line.match(/{/g) ?? []).length - (line.match(/}/g) ?? []).length;
  });
  return found;
}

function assertValid(code, what) {
  assert.deepEqual(stalePassVars(code), [], `${what}: a var in a loop whose first use reads it (declare it with an initialiser)`);
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
        for (const problem of variant.reduceNan ? kernelProblems.nonFiniteRows : []) {
          assertValid(variant.reduceNan.shader(problem), `${family} ${variant.name}'s reduce with the NaN rule ${JSON.stringify(problem)}`);
        }
      }
    });
  }
  test(`the kernels without variants: ${Object.keys(KERNELS).join(', ')}`, () => {
    for (const [name, kernel] of Object.entries(KERNELS)) {
      for (const problem of kernelProblems[name] ?? [{}]) assertValid(kernel.shader(problem), `${name} ${JSON.stringify(problem)}`);
    }
  });
  test('a var declared in a loop and summed into before any store fails', () => {
    const loop = (body) => `fn main() {\n  for (var i = 0u; i < 4u; i++) {\n${body}\n  }\n}`;
    assert.deepEqual(stalePassVars(loop('    var x: f32;\n    x += 1.0;')), ['x']);
    assert.deepEqual(stalePassVars(loop('    var a: array<f32, 2>;\n    let y = a[1];')), ['a']);
    assert.deepEqual(stalePassVars(loop('    var a: array<f32, 2>;\n    a[i % 2u] = 1.0;')), []);
    assert.deepEqual(stalePassVars('fn main() {\n  var x: f32;\n  x += 1.0;\n}'), [], 'zeroed once, at the top of the function');
  });
  test('a wrong program fails: an f16 value stored to an f32 array without a conversion', () => {
    const code = VARIANTS.linear.h64x64k16.shader(linearProblems[0]);
    const wrong = code.replace('vec4f(part[s])', 'part[s]');
    assert.notEqual(wrong, code, 'the float16 kernel changed: find another place to break it');
    assert.throws(() => assertValid(wrong, 'the broken one'), /naga rejects it/);
  });
});
