#!/usr/bin/env python3
"""Rewrites clang 14's relaxed-SIMD prototype opcodes into the standard ones, in place.

Emscripten 3.1.6's clang 14 emits __builtin_wasm_fma_f32x4 as the proposal's prototype opcode
0xfd 0xaf (LEB 0xaf 0x01); engines accept only the standard f32x4.relaxed_madd, 0xfd 0x105
(LEB 0x85 0x02), with the same operand order (a·b + c). clang 14 has no
i16x8.relaxed_dot_i8x16_i7x16_s (0xfd 0x112, LEB 0x92 0x02): the kernels write
__builtin_wasm_relaxed_swizzle_i8x16 (prototype 0xfd 0xa2, LEB 0xa2 0x01; two v128 operands in
the same order) in its place (cpp/src/kernels/simd128/relaxed_dot_simd128.h). All these encodings are
three bytes, so the rewrite is a byte replace at each such instruction. The same three bytes can also stand inside an
immediate (an i32.const whose LEB starts 0xfd 0xaf 0x01: it happened in a test binary), so the
script walks the code section instruction by instruction (wasm_code.py) and patches only the
instructions. As a cross-check, Binaryen's wasm-dis (which still knows the prototype opcode, as
f32x4.relaxed_fma) must count as many; the script refuses to patch otherwise, or when it meets an
opcode it does not know.

Usage: relaxed_simd_opcodes.py MODULE.wasm
"""
import re
import subprocess
import sys

from wasm_code import SIMD_PREFIX, WasmDecodeError, code_section, simd_instruction_offsets

# prototype sub-opcode: (its LEB's second byte, the standard opcode's LEB, wasm-dis's name,
# whether a module must have it)
REWRITES = {
    0xAF: (0x01, bytes([0x85, 0x02]), 'f32x4.relaxed_fma', True),        # → f32x4.relaxed_madd
    0xA2: (0x01, bytes([0x92, 0x02]), 'i8x16.relaxed_swizzle', False),   # → i16x8.relaxed_dot_i8x16_i7x16_s
}


def main(path):
    data = bytearray(open(path, 'rb').read())
    try:
        begin, end = code_section(data)
        found = {op: simd_instruction_offsets(data, begin, end, op) for op in REWRITES}
    except WasmDecodeError as e:
        sys.exit(f'relaxed_simd_opcodes: {path}: {e}; refusing to patch')
    dis = subprocess.run(['wasm-dis', path], capture_output=True, text=True)
    if dis.returncode != 0:
        sys.exit(f'relaxed_simd_opcodes: wasm-dis cannot read {path} (already patched?): '
                 f'{dis.stderr.strip()[:200]}')
    for op, (second, standard, name, required) in REWRITES.items():
        at = found[op]
        instructions = len(re.findall(r'\b' + re.escape(name) + r'\b', dis.stdout))
        if len(at) != instructions:
            sys.exit(f'relaxed_simd_opcodes: {path}: {len(at)} decoded but {instructions} '
                     f'{name} instructions by wasm-dis; refusing to patch')
        if required and instructions == 0:
            sys.exit(f'relaxed_simd_opcodes: {path} has no {name} (built without it?)')
        for offset in at:
            assert data[offset] == SIMD_PREFIX and data[offset + 1:offset + 3] == bytes([op, second])
            data[offset + 1:offset + 3] = standard
    open(path, 'wb').write(data)
    print(f'relaxed_simd_opcodes: {path}: ' + ', '.join(
        f'{len(found[op])} {name}' for op, (_, _, name, _) in REWRITES.items()) + ' rewritten')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
