#!/usr/bin/env python3
"""Rewrites clang 14's relaxed-SIMD FMA into the standard opcode, in place.

Emscripten 3.1.6's clang 14 emits __builtin_wasm_fma_f32x4 as the proposal's prototype opcode
0xfd 0xaf (LEB 0xaf 0x01); engines accept only the standard f32x4.relaxed_madd, 0xfd 0x105
(LEB 0x85 0x02), with the same operand order (a·b + c). Both encodings are three bytes, so the
rewrite is a byte replace at each such instruction. The same three bytes can also stand inside an
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

PROTOTYPE_FMA = 0xAF
STANDARD = bytes([0xFD, 0x85, 0x02])


def main(path):
    data = bytearray(open(path, 'rb').read())
    try:
        begin, end = code_section(data)
        at = simd_instruction_offsets(data, begin, end, PROTOTYPE_FMA)
    except WasmDecodeError as e:
        sys.exit(f'relaxed_simd_opcodes: {path}: {e}; refusing to patch')
    dis = subprocess.run(['wasm-dis', path], capture_output=True, text=True)
    if dis.returncode != 0:
        sys.exit(f'relaxed_simd_opcodes: wasm-dis cannot read {path} (already patched?): '
                 f'{dis.stderr.strip()[:200]}')
    instructions = len(re.findall(r'\bf32x4\.relaxed_fma\b', dis.stdout))
    if len(at) != instructions:
        sys.exit(f'relaxed_simd_opcodes: {path}: {len(at)} decoded but {instructions} '
                 'f32x4.relaxed_fma instructions by wasm-dis; refusing to patch')
    if instructions == 0:
        sys.exit(f'relaxed_simd_opcodes: {path} has no f32x4.relaxed_fma (built without it?)')
    for offset in at:
        assert data[offset] == SIMD_PREFIX and data[offset + 1:offset + 3] == bytes([0xAF, 0x01])
        data[offset:offset + 3] = STANDARD
    open(path, 'wb').write(data)
    print(f'relaxed_simd_opcodes: {path}: {instructions} f32x4.relaxed_fma → f32x4.relaxed_madd')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
