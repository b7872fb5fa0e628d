// Mutation fuzzer of loadSafetensors(): every mutated file (safetensors_mutations.mjs) must either
// load into tensors that agree with an independent reading of the same bytes, or throw one of the
// package's typed errors; never another exception, never a file slower than SLOW_MS, never a hang
// (the files run in a worker, watched from here: tests/fuzz/fuzz_driver.mjs).
//   node tests/fuzz/safetensors_fuzz.mjs [files = 1000000] [--seconds S] [--seed N]
//   node tests/fuzz/safetensors_fuzz.mjs --replay I [--seed N]    (iteration I again, in this thread)
// A finding's file is written to build/fuzz/safetensors/ (ignored by git) and the run exits 1.
import { loadSafetensors } from '#webattention';
import { fuzz } from './fuzz_driver.mjs';
import { mutatedFile } from './safetensors_mutations.mjs';

const SIZE = { F32: 4, F16: 2, BF16: 2 };

/** The value at `offset` read independently of the loader (DataView and plain arithmetic). */
function readValue(view, dtype, offset) {
  if (dtype === 'F32') return view.getFloat32(offset, true);
  const h = view.getUint16(offset, true);
  if (dtype === 'BF16') {
    const scratch = new DataView(new ArrayBuffer(4));
    scratch.setUint32(0, h << 16 >>> 0);
    return scratch.getFloat32(0);
  }
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  return sign * (e === 0 ? m * 2 ** -24 : 2 ** (e - 15) * (1 + m / 1024));
}

/** An accepted file against its own header: returns a problem or null. */
function disagreement(bytes, result) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  if (names.length !== result.size) return `${result.size} tensors, the header has ${names.length}`;
  let covered = 0;
  for (const name of names) {
    const { dtype, shape, data_offsets: [begin, end] } = header[name];
    const t = result.get(name);
    if (!t || t.dtype !== dtype || JSON.stringify(t.shape) !== JSON.stringify(shape)) return `tensor ${JSON.stringify(name)}: ${JSON.stringify(t)}`;
    const count = shape.reduce((a, b) => a * b, 1);
    if (!(t.data instanceof Float32Array) || t.data.length !== count || end - begin !== count * SIZE[dtype]) {
      return `tensor ${JSON.stringify(name)}: ${t.data?.length} values for shape ${JSON.stringify(shape)}, [${begin}, ${end}]`;
    }
    for (let i = 0; i < count; i++) {
      const want = readValue(view, dtype, 8 + n + begin + i * SIZE[dtype]);
      if (!Object.is(t.data[i], want) && !(Number.isNaN(want) && Number.isNaN(t.data[i]))) {
        return `tensor ${JSON.stringify(name)}[${i}]: ${t.data[i]}, the bytes say ${want}`;
      }
    }
    covered += end - begin;
  }
  if (covered !== bytes.length - 8 - n) return `the tensors cover ${covered} of ${bytes.length - 8 - n} data bytes`;
  const metadata = Object.entries(header.__metadata__ ?? {});
  if (JSON.stringify(metadata) !== JSON.stringify([...result.metadata])) return `metadata ${JSON.stringify([...result.metadata])}`;
  return null;
}

await fuzz({
  name: 'safetensors', extension: 'safetensors', url: new URL(import.meta.url), mutatedFile, load: (bytes) => loadSafetensors(bytes), disagreement,
});
