#!/usr/bin/env python3
"""Rewrites clang 14's relaxed-SIMD FMA into the standard opcode, in place.

Emscripten 3.1.6's clang 14 emits __builtin_wasm_fma_f32x4 as the proposal's prototype opcode
0xfd 0xaf (LEB 0xaf 0x01); engines accept only the standard f32x4.relaxed_madd, 0xfd 0x105
(LEB 0x85 0x02), with the same operand order (a·b + c). Both encodings are three bytes, so the
rewrite is a byte replace inside the code section. It is safe only if every occurrence of those
three bytes is an instruction: Binaryen's wasm-dis (which still knows the prototype opcode, as
f32x4.relaxed_fma) counts the instructions, and the script refuses to patch unless the byte
count in the code section matches.

Usage: relaxed_simd_opcodes.py MODULE.wasm
"""
import re
import subprocess
import sys

PROTOTYPE = bytes([0xFD, 0xAF, 0x01])
STANDARD = bytes([0xFD, 0x85, 0x02])
CODE_SECTION = 10


def leb128(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def code_section(data):
    at = 8  # magic + version
    while at < len(data):
        section_id = data[at]
        size, body = leb128(data, at + 1)
        if section_id == CODE_SECTION:
            return body, body + size
        at = body + size
    sys.exit('relaxed_simd_opcodes: no code section')


def main(path):
    data = bytearray(open(path, 'rb').read())
    begin, end = code_section(data)
    found = data[begin:end].count(PROTOTYPE)
    dis = subprocess.run(['wasm-dis', path], capture_output=True, text=True)
    if dis.returncode != 0:
        sys.exit(f'relaxed_simd_opcodes: wasm-dis cannot read {path} (already patched?): '
                 f'{dis.stderr.strip()[:200]}')
    text = dis.stdout
    instructions = len(re.findall(r'\bf32x4\.relaxed_fma\b', text))
    if found != instructions:
        sys.exit(f'relaxed_simd_opcodes: {path}: {found} byte matches but {instructions} '
                 'f32x4.relaxed_fma instructions; refusing to patch')
    if instructions == 0:
        sys.exit(f'relaxed_simd_opcodes: {path} has no f32x4.relaxed_fma (built without it?)')
    data[begin:end] = data[begin:end].replace(PROTOTYPE, STANDARD)
    open(path, 'wb').write(data)
    print(f'relaxed_simd_opcodes: {path}: {instructions} f32x4.relaxed_fma → f32x4.relaxed_madd')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
