// forward()'s positionIds (docs/attention-math/decoding.md §8) on whichever WASM module and thread count
// the environment picks (WEBATTENTION_WASM, WEBATTENTION_THREADS): the default ids change no bit,
// hostile ids are typed errors that leave the module and its cache untouched
// (tests/contract/position_ids.mjs; WebGPU: tests/webgpu/node_position_ids.test.mjs). Ids that
// move rows meet their float64 truth in the checkpoint fixtures (checkpoint_layouts.test.js).
import { test } from 'node:test';
import * as api from '#webattention';
import { assertDefaultIdsChangeNothing, assertHostileIdsRefused, assertMisplacedIdsRefused } from '../contract/position_ids_asserts.mjs';

test('positionIds equal to the rows\' own positions give the same bits as none: plain, cached (a wrapped window), cache.read()', () =>
  assertDefaultIdsChangeNothing(api));

test('hostile positionIds are typed errors naming positionIds; the cache keeps its length and rows, the next call works', () =>
  assertHostileIdsRefused(api));

test('positionIds without rotary, or with S != L and no cache, are typed errors naming positionIds', () =>
  assertMisplacedIdsRefused(api));
