// Mutation fuzzer of loadSafetensors(): every mutated file (safetensors_mutations.mjs) must either
// load into tensors that agree with an independent reading of the same bytes, or throw one of the
// package's typed errors; never another exception, never a file slower than SLOW_MS, never a hang
// (the files run in a worker, watched from here: no progress for HANG_MS ends the run).
//   node tests/fuzz/safetensors_fuzz.mjs [files = 1000000] [--seconds S] [--seed N]
//   node tests/fuzz/safetensors_fuzz.mjs --replay I [--seed N]    (iteration I again, in this thread)
// A finding's file is written to build/fuzz/safetensors/ (ignored by git) and the run exits 1.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { loadSafetensors, WebAttentionError } from '#webattention';
import { mutatedFile } from './safetensors_mutations.mjs';

const SLOW_MS = 100;
const HANG_MS = 10_000;
const MAX_FINDINGS = 20;
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

/** Runs one file: { outcome: 'loaded' | a class of error, ms, problem (a finding) }. */
function runOne(bytes) {
  const first = timedRun(bytes);
  if (first.problem || first.ms <= SLOW_MS) return first;
  // A slow call on a shared machine is usually a pause (GC, another process): the file is slow
  // only if it is slow every time.
  const ms = Math.min(first.ms, ...[1, 2, 3].map(() => timedRun(bytes).ms));
  return { ...first, ms, problem: ms > SLOW_MS ? `took ${ms.toFixed(1)} ms (the fastest of 4 runs)` : null };
}

function timedRun(bytes) {
  const start = performance.now();
  let outcome;
  let problem = null;
  try {
    const result = loadSafetensors(bytes);
    outcome = 'loaded';
    problem = disagreement(bytes, result);
  } catch (e) {
    if (!(e instanceof WebAttentionError)) problem = `threw ${e?.name}: ${e?.message}`;
    // Same check, same class: the argument and the first words of the message, names and
    // numbers left out.
    const general = (text) => String(text).replace(/"(?:[^"\\]|\\.)*"/g, '"…"').replace(/[0-9]+/g, 'N');
    const detail = String(e?.message).slice(String(e?.message).indexOf(': ') + 2);
    outcome = `${e?.name} ${general(e?.argument)}: ${general(detail).split(' ').slice(0, 4).join(' ')}`;
  }
  return { outcome, ms: performance.now() - start, problem };
}

function workerLoop({ seed, count, seconds, progress }) {
  const counter = new Int32Array(progress);
  const outcomes = new Map();
  const findings = [];
  const start = performance.now();
  let maxMs = 0;
  let files = 0;
  for (let i = 0; i < count && findings.length < MAX_FINDINGS; i++) {
    if ((i & 1023) === 0 && performance.now() - start > seconds * 1000) break;
    Atomics.store(counter, 0, i);
    const { outcome, ms, problem } = runOne(mutatedFile(seed, i));
    files++;
    maxMs = Math.max(maxMs, ms);
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (problem) findings.push({ iteration: i, problem });
  }
  parentPort.postMessage({ files, seconds: (performance.now() - start) / 1000, maxMs, findings, outcomes: [...outcomes] });
}

function saveFinding(seed, iteration) {
  const dir = new URL('../../build/fuzz/safetensors/', import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`seed${seed}-iteration${iteration}.safetensors`, dir);
  writeFileSync(file, mutatedFile(seed, iteration));
  return file.pathname;
}

function parseArgs(argv) {
  const options = { count: 1_000_000, seconds: Infinity, seed: 1, replay: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--seconds') options.seconds = Number(argv[++i]);
    else if (flag === '--seed') options.seed = Number(argv[++i]);
    else if (flag === '--replay') options.replay = Number(argv[++i]);
    else if (/^[0-9]+$/.test(flag)) options.count = Number(flag);
    else throw new Error(`unknown argument ${flag}; usage: safetensors_fuzz.mjs [files] [--seconds S] [--seed N] [--replay I]`);
  }
  if (options.seconds !== Infinity && options.count === 1_000_000 && !argv.some((a) => /^[0-9]+$/.test(a))) options.count = Infinity;
  return options;
}

async function main() {
  const { count, seconds, seed, replay } = parseArgs(process.argv.slice(2));
  if (replay !== null) {
    const { outcome, ms, problem } = runOne(mutatedFile(seed, replay));
    console.log(`iteration ${replay} of seed ${seed}: ${outcome} (${ms.toFixed(2)} ms)${problem ? `; FINDING: ${problem}` : ''}`);
    console.log(`file: ${saveFinding(seed, replay)}`);
    process.exit(problem ? 1 : 0);
  }
  const progress = new SharedArrayBuffer(4);
  const worker = new Worker(new URL(import.meta.url), { workerData: { seed, count, seconds, progress } });
  const counter = new Int32Array(progress);
  let last = -1;
  let still = 0;
  const watchdog = setInterval(() => {
    const now = Atomics.load(counter, 0);
    still = now === last ? still + 1000 : 0;
    last = now;
    if (still >= HANG_MS) {
      clearInterval(watchdog);
      worker.terminate();
      console.log(`FINDING: iteration ${now} of seed ${seed} made no progress for ${HANG_MS / 1000} s (a hang); file: ${saveFinding(seed, now)}`);
      process.exitCode = 1;
    }
  }, 1000);
  worker.on('error', (e) => { clearInterval(watchdog); console.log(`FINDING: the fuzz worker failed: ${e.stack}`); process.exitCode = 1; });
  worker.on('message', ({ files, seconds: took, maxMs, findings, outcomes }) => {
    clearInterval(watchdog);
    const loaded = outcomes.find(([o]) => o === 'loaded')?.[1] ?? 0;
    console.log(`safetensors fuzz, seed ${seed}: ${files} mutated files in ${took.toFixed(1)} s (${Math.round(files / took)}/s), `
      + `${loaded} loaded and checked against their bytes, ${files - loaded} refused with a typed error; slowest file ${maxMs.toFixed(2)} ms`);
    console.log(`${outcomes.length} distinct outcomes; the most common:`);
    for (const [outcome, n] of outcomes.sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.SHOW ?? 15))) console.log(`  ${String(n).padStart(8)}  ${outcome}`);
    for (const { iteration, problem } of findings) {
      console.log(`FINDING: iteration ${iteration}: ${problem}; file: ${saveFinding(seed, iteration)}`);
    }
    console.log(findings.length ? `${findings.length} findings` : 'no findings');
    if (findings.length) process.exitCode = 1;
  });
}

if (isMainThread) await main();
else workerLoop(workerData);
