// The decode path (L <= DECODE_MAX_L: split-K partials over keys, then a reduce) vs WASM, every
// mask kind, causal, fully masked rows; each call checked to have taken it. Set-up: node_setup.mjs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { filled } from '../contract/contract.mjs';
import { DECODE_MAX_L } from '../internals.mjs';
import { boolMask, gpuMatchesWasm } from './node_setup.mjs';

describe(`decode path (L <= ${DECODE_MAX_L}): split-K partials + reduce vs WASM`, () => {
  const create = { embedDim: 16, numHeads: 2 };
  const H = 2;

  for (const S of [1, 7, 300, 1500, 4096]) {
    test(`L 1, S ${S}, batch 2, weights per head`, () => gpuMatchesWasm({
      create, B: 2, L: 1, S, path: 'decode', seed: S,
      options: { needWeights: true, averageAttnWeights: false },
    }));
  }

  test('key padding mask, boolean [B, S] (S 1500, batch 2: 6 chunks), averaged weights', () => gpuMatchesWasm({
    create, B: 2, L: 1, S: 1500, path: 'decode',
    options: { keyPaddingMask: { data: boolMask(2 * 1500, 3), shape: [2, 1500] }, needWeights: true },
  }));

  test('key padding mask, additive with -inf and -1e9 (S 300)', () => {
    const kpm = filled(2 * 300, 5, 3);
    for (let i = 0; i < kpm.length; i += 7) kpm[i] = -Infinity;
    kpm[4] = -1e9;
    return gpuMatchesWasm({ create, B: 2, L: 1, S: 300, path: 'decode', options: { keyPaddingMask: { data: kpm, shape: [2, 300] } } });
  });

  test('2-D boolean attn mask [L, S] (S 4096)', () => gpuMatchesWasm({
    create, B: 1, L: 1, S: 4096, path: 'decode',
    options: { attnMask: { data: boolMask(4096, 2, 1), shape: [1, 4096] }, needWeights: true },
  }));

  test('2-D additive attn mask with -inf (L 3, S 1500)', () => {
    const am = filled(3 * 1500, 9, 4);
    for (let i = 0; i < am.length; i += 5) am[i] = -Infinity;
    return gpuMatchesWasm({ create, B: 2, L: 3, S: 1500, path: 'decode', options: { attnMask: { data: am, shape: [3, 1500] } } });
  });

  test('per-head 3-D boolean attn mask [B·h, L, S] (batch 2, S 700)', () => gpuMatchesWasm({
    create, B: 2, L: 1, S: 700, path: 'decode',
    options: { attnMask: { data: boolMask(2 * H * 700, 4, 2), shape: [2 * H, 1, 700] }, needWeights: true, averageAttnWeights: false },
  }));

  test('per-head 3-D additive attn mask (batch 2, L 2, S 1500)', () => gpuMatchesWasm({
    create, B: 2, L: 2, S: 1500, path: 'decode',
    options: { attnMask: { data: filled(2 * H * 2 * 1500, 13, 5), shape: [2 * H, 2, 1500] } },
  }));

  test('causal, L 1, S 300: the row sees key 0 only (top-left rule), weights', async () => {
    const { actual } = await gpuMatchesWasm({
      create, B: 2, L: 1, S: 300, path: 'decode', options: { isCausal: true, needWeights: true },
    });
    const w = actual.attnWeights.data;
    for (let b = 0; b < 2; b++) {
      assert.ok(Math.abs(w[b * 300] - 1) < 1e-6, 'all weight on key 0');
      assert.ok(w.slice(b * 300 + 1, (b + 1) * 300).every((x) => x === 0), 'later keys masked');
    }
  });

  test(`causal, L ${DECODE_MAX_L}, S 1500, with a key padding mask`, () => gpuMatchesWasm({
    create, B: 2, L: DECODE_MAX_L, S: 1500, path: 'decode',
    options: { isCausal: true, keyPaddingMask: { data: boolMask(2 * 1500, 2, 1), shape: [2, 1500] }, needWeights: true },
  }));

  test('fully masked rows give zeros (output = out_proj.bias, weights 0), like WASM', async () => {
    const B = 2, L = 2, S = 600;
    const kpm = new Uint8Array(B * S);
    kpm.fill(1, S, 2 * S);                             // batch 1: every key padded (3 chunks)
    const am = new Uint8Array(B * H * L * S);
    am.fill(1, (1 * L + 0) * S, (1 * L + 1) * S);      // batch 0, head 1, row 0: every key masked
    am.fill(1, 0, 256);                                // batch 0, head 0, row 0: first chunk all masked
    const { actual } = await gpuMatchesWasm({
      create, B, L, S, path: 'decode',
      options: { keyPaddingMask: { data: kpm, shape: [B, S] }, attnMask: { data: am, shape: [B * H, L, S] }, needWeights: true, averageAttnWeights: false },
    });
    const w = actual.attnWeights.data;
    assert.ok(w.slice(B * H * L * S / 2).every((x) => x === 0), 'batch 1 weights are zero');
    assert.ok(w.slice(L * S, (L + 1) * S).every((x) => x === 0), 'batch 0, head 1, row 0 weights are zero');
    assert.ok(actual.output.data.every(Number.isFinite));
  });

  test('large logits (inputs ×30), S 1500, additive mask', () => gpuMatchesWasm({
    create, B: 2, L: 1, S: 1500, path: 'decode', scale: 30,
    options: { attnMask: { data: filled(1500, 21, 2), shape: [1, 1500] }, needWeights: true },
  }));

  test('batch 3, L 4, cross-attention with kdim/vdim and free head dims (d_k 24, d_v 40)', () => gpuMatchesWasm({
    create: { embedDim: 16, numHeads: 2, kdim: 12, vdim: 20, headDim: 24, valueHeadDim: 40 }, B: 3, L: 4, S: 1000, path: 'decode',
    options: { keyPaddingMask: { data: boolMask(3 * 1000, 11), shape: [3, 1000] } },
  }));

  test('self-attention with L = S = 1 (fused Q/K/V) takes decode; key === value with L 2', async () => {
    await gpuMatchesWasm({ create, B: 2, L: 1, S: 1, self: true, path: 'decode', options: { isCausal: true } });
    await gpuMatchesWasm({ create, B: 2, L: 2, S: 900, kvSame: true, path: 'decode' });
  });

  test(`L ${DECODE_MAX_L + 1} takes the flash kernel`, () => gpuMatchesWasm({
    create, B: 1, L: DECODE_MAX_L + 1, S: 300, path: 'flash', options: { isCausal: true },
  }));
});
