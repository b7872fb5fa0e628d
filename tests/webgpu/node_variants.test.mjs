// Every WebGPU kernel variant (selection/kernel_config.js's catalogue), pinned with configure({ gpuKernels }),
// against WASM on shapes that reach its edges: ragged tiles (rows, columns and K not multiples
// of the tile; odd widths take the scalar-load flavour, multiples of 4 the vec4 one), several key
// tiles, causal across tiles, masks, rows with every key masked, d_k ≠ d_v, grouped-query heads.
// Each call is checked to have run the pinned variant. On SwiftShader, the linear and attention
// variants × shapes shrink to their covering subsets (onGpuOrCovering): every variant and every
// shape, not every pair. Set-up: node_setup.mjs.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { configure } from '#webattention';
import { selectionHooks } from '../internals.mjs';
import { VARIANTS, fittingVariants } from '../../web/src/webgpu/programs.js';
import { pairs } from './covering.mjs';
import { adapter, adapterName, gpuMatchesWasm, onGpuOrCovering, withPinned } from './node_setup.mjs';
import { attentionCases } from './attention_cases.mjs';

after(() => {
  selectionHooks.onCall = null;
  configure({ gpuKernels: {} });
});

const linearCases = [
  ['self-attention E 132 (vec4 loads), L 70', { create: { embedDim: 132, numHeads: 4 }, B: 1, L: 70, self: true }],
  ['kdim 13, vdim 7 (scalar loads), batch 2, L 9, S 131', { create: { embedDim: 20, numHeads: 2, kdim: 13, vdim: 7 }, B: 2, L: 9, S: 131 }],
  // A decode step's few rows (rows8's calls): 3 rows of a ragged row group, 1 row.
  ['few rows: batch 3, L 1, E 132 (vec4 loads), GQA', { create: { embedDim: 132, numHeads: 4, numKvHeads: 2 }, B: 3, L: 1, self: true }],
  ['few rows: L 1, S 4, kdim 13, vdim 7 (scalar loads)', { create: { embedDim: 20, numHeads: 2, kdim: 13, vdim: 7 }, B: 1, L: 1, S: 4 }],
  // rows8's word-per-lane reads of narrow rows (linear_rows.wgsl.js rowWords()): E 136, every
  // narrow dtype's rows on words (int4's too, 8 a word; E 132 leaves int4 a value per lane), X as
  // vec4s; E 130, float16 and bfloat16 on words with X read a value at a time.
  ['few rows: batch 2, L 1, E 136 (every narrow row on words), GQA', { create: { embedDim: 136, numHeads: 4, numKvHeads: 2 }, B: 2, L: 1, self: true }],
  ['few rows: L 2, E 130 (16-bit rows on words, scalar X)', { create: { embedDim: 130, numHeads: 2 }, B: 1, L: 2, self: true }],
];
// The rows fits() sees: the call's largest projection's (call_kernels.js).
const callRows = ({ B, L, S = L }) => B * Math.max(L, S);
// The variants this adapter can run for `problem` (a pin of one it lacks the features of falls back).
const fitting = (family, problem) => fittingVariants(family, adapter, problem).map((v) => v.name);
const linearPairs = pairs(fitting('linear', {}), linearCases)
  .filter(([name, [, args]]) => VARIANTS.linear[name].fits(adapter.limits, { rows: callRows(args) }));

describe(`linear variants vs WASM (Dawn, ${adapterName})`, () => {
  for (const [name, [title, args]] of onGpuOrCovering(linearPairs, ([n, [t]]) => [n, t])) {
    test(`${name}: ${title}`, () => withPinned('linear', name, () => gpuMatchesWasm(args)));
  }
});

// rows8 reads W through its own loops (vec4s for float32; a narrow dtype's words, or weight(n, k)),
// and rows8sg with it (its column sums by subgroup shuffles): every few-rows case on every weights
// dtype, whatever the covering subset above kept.
const ROWS_VARIANTS = fitting('linear', { rows: 1 }).filter((name) => !fitting('linear', { rows: 70 }).includes(name));
describe(`${ROWS_VARIANTS.join(', ')} on every weights dtype vs WASM (Dawn, ${adapterName})`, () => {
  const fewRows = linearCases.filter(([, args]) => VARIANTS.linear.rows8.fits(adapter.limits, { rows: callRows(args) }));
  for (const name of ROWS_VARIANTS) {
    for (const weightsDtype of ['float32', 'float16', 'bfloat16', 'int8', 'int4']) {
      for (const [title, args] of fewRows) {
        test(`${name}, ${weightsDtype}: ${title}`, () => withPinned('linear', name, () => gpuMatchesWasm({ ...args, create: { ...args.create, weightsDtype } })));
      }
    }
  }
});

describe(`attention variants vs WASM (Dawn, ${adapterName})`, () => {
  // Only the pairs a variant can run on this adapter (its workgroup memory at these head widths,
  // its features, a float32 module's precision); what a pinned variant that does not fit does is
  // the next test's.
  const attentionPairs = pairs(Object.keys(VARIANTS.attention), attentionCases).filter(([name, [, heads]]) => fitting('attention', heads).includes(name));
  for (const [name, [title, , args]] of onGpuOrCovering(attentionPairs, ([n, [t]]) => [n, t])) {
    test(`${name}: ${title}`, () => withPinned('attention', name, () => gpuMatchesWasm({ ...args, path: 'flash' })));
  }

  test('a pinned variant that does not fit the head widths gives way to one that does, and the answer is the same', async () => {
    const heads = { dk: 512, dv: 512 };  // wider than every cooperative tile's workgroup memory
    const misfit = Object.entries(VARIANTS.attention).find(([, v]) => !v.fits(adapter.limits, heads));
    assert.ok(misfit, 'some attention variant cannot take d = 512 on this adapter');
    const ran = [];
    selectionHooks.onCall = (names) => ran.push(names);
    configure({ gpuKernels: { attention: misfit[0] } });
    try {
      await gpuMatchesWasm({ create: { embedDim: 1024, numHeads: 2 }, B: 1, L: 9, S: 12, path: 'flash', options: { isCausal: false } });
    } finally {
      configure({ gpuKernels: {} });
      selectionHooks.onCall = null;
    }
    assert.ok(ran.length > 0, 'a GPU call ran');
    for (const names of ran) {
      assert.notEqual(names.attention, misfit[0]);
      assert.ok(VARIANTS.attention[names.attention].fits(adapter.limits, heads), `${names.attention} fits d = 512`);
    }
  });
});

describe(`decode variants vs WASM (Dawn, ${adapterName})`, () => {
  for (const name of Object.keys(VARIANTS.decode)) {
    test(`${name}: L 2, S 700 (several chunks), causal, weights`, () => withPinned('decode', name, () => gpuMatchesWasm({
      create: { embedDim: 32, numHeads: 4 }, B: 2, L: 2, S: 700, path: 'decode', options: { isCausal: true, needWeights: true },
    })));
    test(`${name}: L 1, S 2100 (ragged chunks of every size), GQA`, () => withPinned('decode', name, () => gpuMatchesWasm({
      create: { embedDim: 32, numHeads: 4, numKvHeads: 2 }, B: 1, L: 1, S: 2100, path: 'decode',
    })));
    test(`${name}: softcap 0.5 after scale 3, k-only bias, L 1, S 300, weights`, () => withPinned('decode', name, () => gpuMatchesWasm({
      create: { embedDim: 32, numHeads: 4, bias: { k: true }, scale: 3, softcap: 0.5 }, B: 1, L: 1, S: 300, path: 'decode', options: { needWeights: true },
    })));
    // Rows 0 and 1 see keys 0 and 0..1: NaN / Inf in the first chunk's and a later chunk's keys.
    test(`${name}: masked means absent: NaN and Inf at future keys, weights`, () => withPinned('decode', name, () => gpuMatchesWasm({
      create: { embedDim: 32, numHeads: 4 }, B: 2, L: 2, S: 700, path: 'decode', options: { isCausal: true, needWeights: true },
      nonFiniteKeys: [[5, NaN], [300, Infinity]],
    })));
  }
});
