"""A WebAssembly code section walked instruction by instruction, for relaxed_simd_opcodes.py: the
offsets of one SIMD (0xfd-prefixed) instruction, so that a byte pattern inside an immediate is
never taken for it. It knows the instructions Emscripten 3.1.6 emits for this project (MVP,
sign extension, saturating truncation, bulk memory, reference types, exceptions, threads and
atomics, SIMD128 with relaxed SIMD); anything else, or a body that does not end where its size
says, is a WasmDecodeError.
"""

SIMD_PREFIX = 0xFD
CODE_SECTION = 10
VALUE_TYPES = {0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F}


class WasmDecodeError(Exception):
    pass


class Reader:
    def __init__(self, data, at, end):
        self.data, self.at, self.end = data, at, end

    def byte(self):
        if self.at >= self.end:
            raise WasmDecodeError(f'unexpected end at byte {self.at}')
        b = self.data[self.at]
        self.at += 1
        return b

    def uleb(self):
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return value

    def pass_leb(self):  # a signed LEB (s32, s33, s64): only its length matters here
        while self.byte() & 0x80:
            pass

    def advance(self, n):  # past n bytes of an immediate
        if self.at + n > self.end:
            raise WasmDecodeError(f'unexpected end at byte {self.at}')
        self.at += n

    def memarg(self):
        self.uleb()  # alignment
        self.uleb()  # offset


def code_section(data):
    """(begin, end) byte offsets of the module's code section."""
    at = 8  # magic + version
    while at < len(data):
        section_id = data[at]
        r = Reader(data, at + 1, len(data))
        size = r.uleb()
        if section_id == CODE_SECTION:
            return r.at, r.at + size
        at = r.at + size
    raise WasmDecodeError('no code section')


# Single-byte opcodes and how to read past their immediates.
def _blocktype(r):
    b = r.data[r.at]
    if b == 0x40 or b in VALUE_TYPES:
        r.advance(1)
    else:
        r.pass_leb()  # a type index (s33)


def _br_table(r):
    for _ in range(r.uleb() + 1):
        r.uleb()


def _select_types(r):
    r.advance(r.uleb())


_NONE = lambda r: None  # noqa: E731
_U32 = lambda r: r.uleb()  # noqa: E731
OPCODES = {0x00: _NONE, 0x01: _NONE, 0x02: _blocktype, 0x03: _blocktype, 0x04: _blocktype,
           0x05: _NONE, 0x06: _blocktype, 0x07: _U32, 0x08: _U32, 0x09: _U32, 0x0B: _NONE,
           0x0C: _U32, 0x0D: _U32, 0x0E: _br_table, 0x0F: _NONE, 0x10: _U32,
           0x11: lambda r: (r.uleb(), r.uleb()), 0x18: _U32, 0x19: _NONE, 0x1A: _NONE,
           0x1B: _NONE, 0x1C: _select_types, 0x3F: _U32, 0x40: _U32,
           0x41: lambda r: r.pass_leb(), 0x42: lambda r: r.pass_leb(),
           0x43: lambda r: r.advance(4), 0x44: lambda r: r.advance(8),
           0xD0: lambda r: r.advance(1), 0xD1: _NONE, 0xD2: _U32}
for op in range(0x20, 0x27):  # local.get … global.set, table.get, table.set
    OPCODES[op] = _U32
for op in range(0x28, 0x3F):  # loads and stores
    OPCODES[op] = Reader.memarg
for op in range(0x45, 0xC5):  # numeric, sign extension
    OPCODES[op] = _NONE


def _misc(r):  # 0xfc prefix
    sub = r.uleb()
    if sub <= 7:
        return
    if sub in (8, 10, 12, 14):
        r.uleb()
        r.uleb()
    elif sub in (9, 11, 13, 15, 16, 17):
        r.uleb()
    else:
        raise WasmDecodeError(f'unknown 0xfc {sub} at byte {r.at}')


def _simd(r):  # 0xfd prefix; returns the sub-opcode
    sub = r.uleb()
    if sub <= 11 or sub in (92, 93):  # loads and stores
        r.memarg()
    elif sub in (12, 13):  # v128.const, i8x16.shuffle
        r.advance(16)
    elif 21 <= sub <= 34:  # extract / replace lane
        r.advance(1)
    elif 84 <= sub <= 91:  # load / store lane
        r.memarg()
        r.advance(1)
    elif sub > 0x113:
        raise WasmDecodeError(f'unknown 0xfd {sub} at byte {r.at}')
    return sub


def _atomic(r):  # 0xfe prefix
    sub = r.uleb()
    if sub == 0x03:  # atomic.fence
        r.advance(1)
    elif sub <= 0x02 or 0x10 <= sub <= 0x4E:
        r.memarg()
    else:
        raise WasmDecodeError(f'unknown 0xfe {sub} at byte {r.at}')


def simd_instruction_offsets(data, begin, end, sub_opcode):
    """Byte offsets of every 0xfd `sub_opcode` instruction in the code section [begin, end)."""
    found = []
    r = Reader(data, begin, end)
    for _ in range(r.uleb()):
        size = r.uleb()
        body_end = r.at + size
        body = Reader(data, r.at, body_end)
        for _ in range(body.uleb()):  # local declarations: count, type
            body.uleb()
            body.advance(1)
        while body.at < body_end:
            at = body.at
            op = body.byte()
            if op == SIMD_PREFIX:
                if _simd(body) == sub_opcode:
                    found.append(at)
            elif op == 0xFC:
                _misc(body)
            elif op == 0xFE:
                _atomic(body)
            elif op in OPCODES:
                OPCODES[op](body)
            else:
                raise WasmDecodeError(f'unknown opcode 0x{op:02x} at byte {at}')
        if body.at != body_end:
            raise WasmDecodeError(f'a function body overruns its size at byte {body.at}')
        r.at = body_end
    if r.at != end:
        raise WasmDecodeError('the code section does not end where its size says')
    return found
