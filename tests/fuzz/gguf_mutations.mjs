// Mutated GGUF files for tests/fuzz/gguf_fuzz.mjs, each made from one seeded random stream, so
// that iteration i of seed s is the same file on every run (a finding is replayed by its number).
// Seeds are valid files written by tests/fixtures/make_gguf.mjs; mutations act on the header's
// fields (found by walking the seed: every count, length, type id, dim and offset, set to values
// a hostile writer would pick), and on the bytes (flips, truncation, insertion, deletion).
import { dequantizedGguf, ggufBytes, llamaGguf, rng, tensor } from '../fixtures/make_gguf.mjs';
import { rngFor, splice } from './safetensors_mutations.mjs';
import { llamaModel } from '../../scripts/write_gguf.mjs';

function seeds() {
  const random = rng(9);
  return [
    llamaGguf().bytes,
    dequantizedGguf().bytes,
    // A whole llama model as scripts/write_gguf.mjs writes it (fromGguf's input), Q4_0 and Q8_0.
    llamaModel({ type: 'Q4_0', embed: 32, heads: 2, kvHeads: 1, layers: 1, ffn: 32, vocab: 8 }).bytes,
    llamaModel({ type: 'Q8_0', embed: 32, heads: 2, kvHeads: 2, layers: 1, ffn: 32, vocab: 8 }).bytes,
    ggufBytes({ metadata: [['general.alignment', 'UINT32', 64], ['a', 'ARRAY', { type: 'ARRAY', values: [{ type: 'STRING', values: ['x'] }] }]],
      tensors: [tensor('a', 'F32', [3], random), tensor('b', 'Q8_0', [32], random), tensor('c', 'Q4_0', [2, 32], random)], alignment: 64 }),
    ggufBytes({ metadata: [['k', 'BOOL', true], ['i', 'INT64', -1n]], version: 2 }),
    ggufBytes({ tensors: [{ name: 'k', ne: [256], type: 'Q4_K', data: new Uint8Array(144) }, tensor('h', 'BF16', [1, 3], random)] }),
  ];
}
export const SEEDS = seeds();

/**
 * The header fields of a valid file, in order: [offset, size (4 | 8), kind]. Kinds: 'count'
 * (tensor / metadata / array counts), 'length' (string lengths), 'vtype' (value types), 'ttype'
 * (tensor type ids), 'dims', 'ndims', 'offset', 'version', 'value' (a scalar's bytes); `end`
 * on the list: where the tensor infos end.
 */
export function fields(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = [[4, 4, 'version'], [8, 8, 'count'], [16, 8, 'count']];
  let at = 24;
  const SIZES = [1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8];
  const string = () => { out.push([at, 8, 'length']); at += 8 + Number(view.getBigUint64(at, true)); };
  const value = (type) => {
    if (type === 8) return string();
    if (type !== 9) { out.push([at, SIZES[type], 'value']); at += SIZES[type]; return undefined; }
    const element = view.getUint32(at, true);
    out.push([at, 4, 'vtype'], [at + 4, 8, 'count']);
    const n = Number(view.getBigUint64(at + 4, true));
    at += 12;
    for (let i = 0; i < n; i++) value(element);
    return undefined;
  };
  const tensors = Number(view.getBigUint64(8, true));
  for (let i = Number(view.getBigUint64(16, true)); i > 0; i--) {
    string();
    const type = view.getUint32(at, true);
    out.push([at, 4, 'vtype']);
    at += 4;
    value(type);
  }
  for (let i = 0; i < tensors; i++) {
    string();
    const dims = view.getUint32(at, true);
    out.push([at, 4, 'ndims']);
    at += 4;
    for (let d = 0; d < dims; d++, at += 8) out.push([at, 8, 'dims']);
    out.push([at, 4, 'ttype'], [at + 4, 8, 'offset']);
    at += 12;
  }
  out.end = at;
  return out;
}
const FIELDS = SEEDS.map(fields);

const U64 = [0n, 1n, 2n, 3n, 4n, 5n, 8n, 16n, 31n, 32n, 33n, 48n, 63n, 64n, 96n, 255n, 256n, 2n ** 31n - 1n, 2n ** 31n, 2n ** 32n - 1n,
  2n ** 32n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];
const U32 = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 13, 14, 15, 20, 29, 30, 31, 33, 34, 35, 39, 40, 64, 255, 2 ** 31, 2 ** 32 - 1, 0x03000000];
const BYTES = [0x00, 0x01, 0x02, 0x7f, 0x80, 0xc0, 0xed, 0xfe, 0xff];

/** One mutation of `bytes` (a copy); `fieldList` the seed's fields (offsets drift after a splice). */
function mutate(bytes, fieldList, r) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kind = r.int(8);
  if (kind <= 2 && fieldList.length) {
    const [at, size, what] = r.pick(fieldList);
    if (at + size > bytes.length) return bytes;
    if (size === 8) {
      const small = what === 'dims' || what === 'offset' || what === 'length' ? BigInt(view.getBigUint64(at, true)) + BigInt(r.int(5) - 2) : -1n;
      view.setBigUint64(at, small >= 0n && r.chance(0.4) ? small : r.pick(U64), true);
    } else if (size === 4) {
      view.setUint32(at, r.pick(U32), true);
    } else {
      for (let i = 0; i < size; i++) view.setUint8(at + i, r.pick(BYTES));
    }
    return bytes;
  }
  if (kind === 3) {
    for (let n = 1 + r.int(4); n > 0; n--) bytes[r.int(bytes.length)] ^= 1 << r.int(8);
    return bytes;
  }
  if (kind === 4) return bytes.slice(0, r.int(bytes.length + 1));
  if (kind === 5) return splice(bytes, r.int(bytes.length + 1), r.int(9));
  if (kind === 6) return splice(bytes, r.int(bytes.length + 1), 0, Uint8Array.from({ length: 1 + r.int(8) }, () => r.pick(BYTES)));
  bytes[r.int(bytes.length)] = r.pick(BYTES);
  return bytes;
}

/** Iteration `iteration` of `seed`: a seed file with one to three mutations. */
export function mutatedFile(seed, iteration) {
  const r = rngFor(seed, iteration);
  const which = r.int(SEEDS.length);
  let bytes = SEEDS[which].slice();
  for (let n = 1 + r.int(3); n > 0; n--) {
    if (bytes.length === 0) break;
    bytes = mutate(bytes, FIELDS[which], r);
  }
  return bytes;
}
