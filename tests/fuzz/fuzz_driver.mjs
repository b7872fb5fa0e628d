// The driver of the mutation fuzzers (tests/fuzz/safetensors_fuzz.mjs, gguf_fuzz.mjs): every
// mutated file must either load into a result that agrees with an independent reading of the same
// bytes, or throw one of the package's typed errors; never another exception, never a file slower
// than SLOW_MS, never a hang (the files run in a worker, watched from here: no progress for
// HANG_MS ends the run). Flags: [files = 1000000] [--seconds S] [--seed N], or --replay I [--seed
// N] (iteration I again, in this thread). A finding's file is written to build/fuzz/<name>/
// (ignored by git) and the run exits 1.
import { mkdirSync, writeFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { WebAttentionError } from '#webattention';

const SLOW_MS = 100;
const HANG_MS = 10_000;
const MAX_FINDINGS = 20;

/** Runs one file: { outcome: 'loaded' | a class of error, ms, problem (a finding) }. */
function runOne(target, bytes) {
  const first = timedRun(target, bytes);
  if (first.problem || first.ms <= SLOW_MS) return first;
  // A slow call on a shared machine is usually a pause (GC, another process): the file is slow
  // only if it is slow every time.
  const ms = Math.min(first.ms, ...[1, 2, 3].map(() => timedRun(target, bytes).ms));
  return { ...first, ms, problem: ms > SLOW_MS ? `took ${ms.toFixed(1)} ms (the fastest of 4 runs)` : null };
}

function timedRun({ load, disagreement }, bytes) {
  const start = performance.now();
  let outcome;
  let problem = null;
  try {
    const result = load(bytes);
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

function workerLoop(target, { seed, count, seconds, progress }) {
  const counter = new Int32Array(progress);
  const outcomes = new Map();
  const findings = [];
  const start = performance.now();
  let maxMs = 0;
  let files = 0;
  for (let i = 0; i < count && findings.length < MAX_FINDINGS; i++) {
    if ((i & 1023) === 0 && performance.now() - start > seconds * 1000) break;
    Atomics.store(counter, 0, i);
    const { outcome, ms, problem } = runOne(target, target.mutatedFile(seed, i));
    files++;
    maxMs = Math.max(maxMs, ms);
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    if (problem) findings.push({ iteration: i, problem });
  }
  parentPort.postMessage({ files, seconds: (performance.now() - start) / 1000, maxMs, findings, outcomes: [...outcomes] });
}

function saveFinding({ name, extension, mutatedFile }, seed, iteration) {
  const dir = new URL(`../../build/fuzz/${name}/`, import.meta.url);
  mkdirSync(dir, { recursive: true });
  const file = new URL(`seed${seed}-iteration${iteration}.${extension}`, dir);
  writeFileSync(file, mutatedFile(seed, iteration));
  return file.pathname;
}

function parseArgs(name, argv) {
  const options = { count: 1_000_000, seconds: Infinity, seed: 1, replay: null };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--seconds') options.seconds = Number(argv[++i]);
    else if (flag === '--seed') options.seed = Number(argv[++i]);
    else if (flag === '--replay') options.replay = Number(argv[++i]);
    else if (/^[0-9]+$/.test(flag)) options.count = Number(flag);
    else throw new Error(`unknown argument ${flag}; usage: ${name}_fuzz.mjs [files] [--seconds S] [--seed N] [--replay I]`);
  }
  if (options.seconds !== Infinity && options.count === 1_000_000 && !argv.some((a) => /^[0-9]+$/.test(a))) options.count = Infinity;
  return options;
}

async function main(target) {
  const { count, seconds, seed, replay } = parseArgs(target.name, process.argv.slice(2));
  if (replay !== null) {
    const { outcome, ms, problem } = runOne(target, target.mutatedFile(seed, replay));
    console.log(`iteration ${replay} of seed ${seed}: ${outcome} (${ms.toFixed(2)} ms)${problem ? `; FINDING: ${problem}` : ''}`);
    console.log(`file: ${saveFinding(target, seed, replay)}`);
    process.exit(problem ? 1 : 0);
  }
  const progress = new SharedArrayBuffer(4);
  const worker = new Worker(target.url, { workerData: { seed, count, seconds, progress } });
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
      console.log(`FINDING: iteration ${now} of seed ${seed} made no progress for ${HANG_MS / 1000} s (a hang); file: ${saveFinding(target, seed, now)}`);
      process.exitCode = 1;
    }
  }, 1000);
  worker.on('error', (e) => { clearInterval(watchdog); console.log(`FINDING: the fuzz worker failed: ${e.stack}`); process.exitCode = 1; });
  worker.on('message', ({ files, seconds: took, maxMs, findings, outcomes }) => {
    clearInterval(watchdog);
    const loaded = outcomes.find(([o]) => o === 'loaded')?.[1] ?? 0;
    console.log(`${target.name} fuzz, seed ${seed}: ${files} mutated files in ${took.toFixed(1)} s (${Math.round(files / took)}/s), `
      + `${loaded} loaded and checked against their bytes, ${files - loaded} refused with a typed error; slowest file ${maxMs.toFixed(2)} ms`);
    console.log(`${outcomes.length} distinct outcomes; the most common:`);
    for (const [outcome, n] of outcomes.sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.SHOW ?? 15))) console.log(`  ${String(n).padStart(8)}  ${outcome}`);
    for (const { iteration, problem } of findings) {
      console.log(`FINDING: iteration ${iteration}: ${problem}; file: ${saveFinding(target, seed, iteration)}`);
    }
    console.log(findings.length ? `${findings.length} findings` : 'no findings');
    if (findings.length) process.exitCode = 1;
  });
}

/**
 * Runs the fuzzer of `target`: { name ('safetensors': build/fuzz/<name>/, the usage line),
 * extension (of a finding's file), url (the calling script's import.meta.url: the worker runs it
 * again), mutatedFile(seed, i), load(bytes), disagreement(bytes, result) → a problem or null }.
 * In the main thread: arguments, worker, watchdog, report; in the worker: the files.
 */
export async function fuzz(target) {
  if (isMainThread) await main(target);
  else workerLoop(target, workerData);
}
