// Mutated .safetensors files for tests/fuzz/safetensors_fuzz.mjs, each made from one seeded
// random stream, so that iteration i of seed s is the same file on every run (a finding is
// replayed by its number). Seeds are valid files; mutations act on the bytes, on the header
// length, on the header's JSON (values a hostile writer would pick) and on its text (what JSON
// values cannot spell: duplicate keys, "2.0", invalid UTF-8).
import { entry, f32Bytes, fixtureBytes, safetensorsBytes, validFile } from '../js/safetensors_files.js';

/** mulberry32: a small, fast PRNG; the stream of iteration i of seed s starts from hash(s, i). */
export function rngFor(seed, iteration) {
  let a = (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(iteration + 1, 0xc2b2ae35)) >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(next() * n);
  return { next, int, pick: (list) => list[int(list.length)], chance: (p) => next() < p };
}

export const SEEDS = [
  validFile(),
  fixtureBytes('dtypes.safetensors'),
  fixtureBytes('encoder_layer.safetensors'),
  safetensorsBytes({}),
  safetensorsBytes({ s: entry('BF16', [], 0, 2), z: entry('F32', [0, 3], 2, 2), t: entry('F16', [1, 1, 1], 2, 4),
    __metadata__: { ['__proto__']: 'x', '': '' } }, new Uint8Array([0x80, 0x3f, 0x00, 0x3c])),
  safetensorsBytes('{"__proto__":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"10":{"dtype":"F32","shape":[],"data_offsets":[8,12]}}',
    f32Bytes([1, 2, 3])),
];

const U64 = [0n, 1n, 2n, 7n, 8n, 2n ** 31n - 1n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 32n + 1n, 2n ** 53n, 2n ** 63n,
  2n ** 64n - 1n, 100_000_000n, 100_000_001n];
const NUMBERS = ['0', '1', '2', '3', '4', '8', '-1', '2.0', '1e3', '1E1', '-0', '0.5', '4294967296', '4294967295', '1073741824',
  '9007199254740991', '9007199254740992', '9007199254740993', '18446744073709551615', '1e400', '2251799813685248'];
const VALUES = ['"F32"', '"F16"', '"BF16"', '"I64"', '"F64"', '"U8"', '"BOOL"', '"f32"', '"__proto__"', '"__metadata__"', '"constructor"',
  '""', '"\\u0000"', '"\\ud800"', '"\\udc00"', '"\\ud800\\u0041"', '"\\ud83d\\ude00"', '"\\u0077"', 'null', 'true', 'false', '[]', '{}', '[0]', '[0,0]', '[0,0,0]', '[[1]]', '{"a":"b"}',
  '{"a":1}', '"shape"', '[1,1]', '[4294967296,4294967296]', '[9007199254740991,2]'];
const KEYS = ['dtype', 'shape', 'data_offsets', '__metadata__', '__proto__', 'constructor', '', 'w', 'offsets', 'toString'];
const BYTES = [0x00, 0x01, 0x20, 0x22, 0x2c, 0x2d, 0x2e, 0x30, 0x31, 0x39, 0x3a, 0x5b, 0x5c, 0x5d, 0x7b, 0x7d, 0x7f, 0x80,
  0xbf, 0xc0, 0xc2, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xfe, 0xff];

/** { header: Uint8Array, data: Uint8Array } when the length field fits the file, else null. */
function split(bytes) {
  if (bytes.length < 8) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, 8);
  const n = view.getUint32(0, true);
  if (view.getUint32(4, true) !== 0 || n > bytes.length - 8) return null;
  return { header: bytes.subarray(8, 8 + n), data: bytes.subarray(8 + n) };
}

const join = (header, data) => safetensorsBytes(header, data);
/** bytes with `remove` bytes at `at` replaced by `insert` (a new array). */
export function splice(bytes, at, remove, insert = new Uint8Array(0)) {
  const tail = bytes.subarray(Math.min(bytes.length, at + remove));
  const out = new Uint8Array(at + insert.length + tail.length);
  out.set(bytes.subarray(0, at));
  out.set(insert, at);
  out.set(tail, at + insert.length);
  return out;
}

/** Byte-level mutations, anywhere in the file. */
const BYTE_MUTATIONS = [
  (r, b) => { const c = b.slice(); if (c.length) c[r.int(c.length)] ^= 1 << r.int(8); return c; },
  (r, b) => { const c = b.slice(); if (c.length) c[r.int(Math.min(c.length, 8 + r.int(200)))] = r.pick(BYTES); return c; },
  (r, b) => b.slice(0, r.int(b.length + 1)),
  (r, b) => splice(b, b.length, 0, Uint8Array.from({ length: 1 + r.int(8) }, () => r.int(256))),
  (r, b) => splice(b, r.int(b.length + 1), 1 + r.int(8)),
  (r, b) => { const at = r.int(b.length + 1); return splice(b, at, 0, b.subarray(r.int(b.length + 1)).slice(0, 1 + r.int(16))); },
  (r, b) => {
    const c = b.length >= 8 ? b.slice() : Uint8Array.from([...b, ...new Uint8Array(8 - b.length)]);
    const actual = BigInt(split(b)?.header.length ?? 0);
    const value = r.chance(0.5) ? r.pick(U64) : actual + BigInt(r.int(17) - 8);
    new DataView(c.buffer).setBigUint64(0, value < 0n ? 0n : value, true);
    return c;
  },
];

/** Text-level mutations of the header, the length field kept right (reach the JSON checks). */
const TEXT_MUTATIONS = [
  (r, t) => replaceToken(r, t, /-?[0-9][0-9.eE+-]*/g, () => r.pick(NUMBERS)),
  (r, t) => replaceToken(r, t, /"(?:[^"\\]|\\.)*"/g, () => r.pick(VALUES)),
  (r, t) => replaceToken(r, t, /\[[^\[\]{}]*\]/g, () => r.pick(VALUES)),
  (r, t) => {
    // A duplicate: a copy of one "key":value member of an object inserted beside it.
    const members = [...t.matchAll(/"(?:[^"\\]|\\.)*":("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\{[^{}]*\})/g)];
    if (!members.length) return t;
    const m = r.pick(members);
    return `${t.slice(0, m.index)}${m[0]},${m[0]}${t.slice(m.index + m[0].length)}`;
  },
  (r, t) => { const at = r.int(t.length + 1); return `${t.slice(0, at)}${r.pick([' ', '\n', '\ufeff', ',', '"', '\\', '\u2028', '}', ']'])}${t.slice(at)}`; },
];

function replaceToken(r, text, pattern, make) {
  const tokens = [...text.matchAll(pattern)];
  if (!tokens.length) return text;
  const m = r.pick(tokens);
  return text.slice(0, m.index) + make() + text.slice(m.index + m[0].length);
}

/** object[key] = value as an own property, '__proto__' included (plain assignment would set the prototype). */
function setOwn(object, key, value) {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  return value;
}

/** JSON-level mutations of the parsed header: what a hostile writer can spell in JSON. */
function mutateJson(r, header, dataBytes) {
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  const name = names.length ? r.pick(names) : 'w';
  const e = header[name] && typeof header[name] === 'object' ? header[name] : setOwn(header, name, entry('F32', [1], 0, 4));
  const other = header[r.pick(names.length ? names : [name])];
  const offsets = Array.isArray(e.data_offsets) ? e.data_offsets : [0, 0];
  const moves = [
    () => { e.dtype = r.pick(['F32', 'F16', 'BF16', 'I64', 'F64', 'U8', 'BOOL', 'F8_E4M3', '__proto__', 7, null]); },
    () => { e.shape = Array.isArray(e.shape) ? [...e.shape, r.pick([0, 1, 2, 3, 2 ** 31, 2 ** 32])] : [1]; },
    () => { if (Array.isArray(e.shape)) e.shape = e.shape.slice(0, -1); },
    () => { if (Array.isArray(e.shape) && e.shape.length) e.shape[r.int(e.shape.length)] = r.pick([0, 1, 2, 4, 2 ** 26, 2 ** 52, 2 ** 53]); },
    () => { e.data_offsets = [offsets[1], offsets[0]]; },
    () => { e.data_offsets = offsets.map((o) => o + r.pick([-4, -2, -1, 0, 1, 2, 4, dataBytes])); },
    () => { e.data_offsets = other?.data_offsets ?? [0, dataBytes]; },
    () => { e.data_offsets = r.pick([[0, 0], [0, dataBytes], [dataBytes, dataBytes], [0], [0, 0, 0], [2 ** 53, 2 ** 53 + 4], 'x']); },
    () => { setOwn(e, r.pick(KEYS), r.pick([1, 'x', [], null])); },
    () => { delete e[r.pick(['dtype', 'shape', 'data_offsets'])]; },
    () => { setOwn(header, r.pick(KEYS.concat(['alias'])), { ...e }); },
    () => { delete header[name]; },
    () => { setOwn(header, '__metadata__', r.pick([{ a: 'b' }, { a: 1 }, 'x', null, [], { ['__proto__']: 'p' }, { a: { b: 'c' } }])); },
  ];
  r.pick(moves)();
  // Entries in another order: a file's offsets need not follow its header's order.
  if (r.chance(0.2)) return Object.fromEntries(Object.entries(header).sort(() => r.next() - 0.5));
  return header;
}

/** One mutated file: a seed (sometimes an earlier mutation of it) changed 1 to 4 times. */
export function mutatedFile(seed, iteration) {
  const r = rngFor(seed, iteration);
  let bytes = r.pick(SEEDS);
  for (let steps = 1 + r.int(4); steps > 0; steps--) {
    const parts = split(bytes);
    const kind = r.next();
    if (parts && kind < 0.35) {
      let header;
      try {
        header = JSON.parse(new TextDecoder().decode(parts.header));
      } catch {
        header = null;
      }
      if (header && typeof header === 'object' && !Array.isArray(header)) {
        let data = parts.data;
        if (r.chance(0.1)) data = data.subarray(0, Math.max(0, data.length - 1 - r.int(4)));
        bytes = join(mutateJson(r, header, data.length), data);
        continue;
      }
    }
    if (parts && kind < 0.65) {
      const text = new TextDecoder().decode(parts.header);
      const mutated = r.pick(TEXT_MUTATIONS)(r, text);
      const encoded = new TextEncoder().encode(mutated);
      bytes = join(r.chance(0.1) ? splice(encoded, r.int(encoded.length + 1), 0, [r.pick(BYTES)]) : encoded, parts.data);
      continue;
    }
    bytes = r.pick(BYTE_MUTATIONS)(r, bytes);
  }
  // Now and then at an odd byte offset of a bigger buffer, as a Node Buffer from a pool can be.
  if (r.chance(0.2)) {
    const shift = 1 + r.int(7);
    const holder = new Uint8Array(bytes.length + shift);
    holder.set(bytes, shift);
    return holder.subarray(shift);
  }
  return bytes;
}
