// scripts/relaxed_simd_opcodes.py rewrites clang 14's prototype relaxed FMA (0xfd 0xaf 0x01) into
// f32x4.relaxed_madd (0xfd 0x85 0x02), and the prototype relaxed swizzle (0xfd 0xa2 0x01) that
// stands in for i16x8.relaxed_dot_i8x16_i7x16_s into that (0xfd 0x92 0x02), at the instructions
// only: the same three bytes inside an
// i32.const's immediate stay as they are (a fresh clone's test binary once had one, and the old
// byte count refused to patch it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PATCHER = new URL('../../scripts/relaxed_simd_opcodes.py', import.meta.url).pathname;

// (func (param v128) (result v128)): the prototype swizzle of the parameter with itself, dropped,
// and an i32.const whose LEB immediate is the bytes fd a2 01, dropped; then the prototype FMA of
// the parameter with itself twice, and an i32.const whose LEB immediate is the bytes fd af 01, dropped.
function moduleBytes() {
  const body = [0x01, 0x01, 0x7f, // one i32 local (the walker reads past local declarations)
    0x20, 0x00, 0x20, 0x00, 0xfd, 0xa2, 0x01, 0x1a, // local.get 0 ×2, i8x16.relaxed_swizzle (prototype), drop
    0x41, 0xfd, 0xa2, 0x01, 0x1a, // i32.const, drop
    0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0xfd, 0xaf, 0x01, // local.get 0 ×3, f32x4.relaxed_fma (prototype)
    0x41, 0xfd, 0xaf, 0x01, 0x1a, // i32.const 0x57fd, drop
    0x0b];
  const bytes = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x06, 0x01, 0x60, 0x01, 0x7b, 0x01, 0x7b, // type: (v128) -> v128
    0x03, 0x02, 0x01, 0x00, // one function of type 0
    0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, // export "f"
    0x0a, body.length + 2, 0x01, body.length, ...body];
  return Uint8Array.from(bytes);
}

test('relaxed_simd_opcodes.py patches the FMA and swizzle instructions, not the same bytes inside an immediate', () => {
  const dir = mkdtempSync(join(tmpdir(), 'relaxed-'));
  try {
    const file = join(dir, 'm.wasm');
    const before = moduleBytes();
    writeFileSync(file, before);
    execFileSync('python3', [PATCHER, file], { stdio: 'pipe' });
    const after = readFileSync(file);
    const at = (bytes, pattern) => Buffer.from(bytes).indexOf(Buffer.from(pattern));
    for (const [prototype, standard] of [[0xaf, [0xfd, 0x85, 0x02]], [0xa2, [0xfd, 0x92, 0x02]]]) {
      const instruction = at(before, [0xfd, prototype, 0x01]), immediate = at(before, [0x41, 0xfd, prototype, 0x01]) + 1;
      assert.deepEqual([...after.subarray(instruction, instruction + 3)], standard);
      assert.deepEqual([...after.subarray(immediate, immediate + 3)], [0xfd, prototype, 0x01]);
    }
    assert.equal(after.length, before.length);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
