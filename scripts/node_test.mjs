// `node --test <folders or files>` as scripts/test.sh runs it, with a bound on hangs.
//
// One CI run sat for 90 minutes after a test file's last test had passed: the file's process never
// ended, so `node --test` waited on it forever and nothing said which file it was (the known class
// of Node-on-WASM exit hangs; it never happened here in hundreds of runs). So every file and test
// gets a time limit (a file past it is killed and named, not waited for), and a file that was
// stopped by the limit runs once more, said aloud in the log. A test that fails is never run
// again: only a hang is retried, once. (Not node's forceExit: on Node 20 it ended files before all
// their tests had run, silently: 65 of safetensors_hostile's 78.)
//
//   node [flags for the files' processes] scripts/node_test.mjs tests/js/ tests/browser/
import { readdirSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve, basename, extname, sep } from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

// The longest file here (tests/webgpu/node_storage.test.mjs on SwiftShader) takes ~85 s on two fast
// cores, and passed 300 s on a 2.9 GHz VM with a third of the memory bandwidth (its linear variants
// alone 207 s): the limit is for hangs, so it leaves room for slow machines.
// NODE_TEST_LIMIT_MS: another limit (tests/js/node_test_runner.test.js tries the guard in seconds).
const LIMIT_MS = Number(process.env.NODE_TEST_LIMIT_MS) || 12 * 60 * 1000;

// node --test's own file patterns: test.js, test-*.js, *.test.js, *-test.js, *_test.js, and every
// script under a folder named test.
function isTestFile(path) {
  if (!['.js', '.mjs', '.cjs'].includes(extname(path))) return false;
  const stem = basename(path, extname(path));
  return stem === 'test' || stem.startsWith('test-') || /[.\-_]test$/.test(stem) || path.split(sep).includes('test');
}

function testFiles(paths) {
  const files = [];
  const walk = (path) => {
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path).sort()) if (name !== 'node_modules') walk(join(path, name));
    } else if (isTestFile(path)) {
      files.push(path);
    }
  };
  for (const path of paths) {
    if (statSync(path).isDirectory()) walk(resolve(path));
    else files.push(resolve(path));  // named on the command line: run whatever its name
  }
  return files;
}

// Files at once: one per core. node --test's own default (cores − 1) ran one file at a time on
// two cores and left one idle: tests/js took 85 s against 50 at two (scalar module), 159 against
// 93 on the worker pool; tests/webgpu gains little (SwiftShader runs on every core already).
const CONCURRENCY = availableParallelism();

// Runs the files, the report on stdout; resolves to { failed, hung: files stopped by the limit }.
function runFiles(files) {
  const stream = run({ files, timeout: LIMIT_MS, concurrency: CONCURRENCY });
  let failed = 0;
  const hung = new Set();
  stream.on('test:fail', ({ file, name, details }) => {
    if (details?.error?.failureType === 'testTimeoutFailure') hung.add(file ?? name);
    else failed++;
  });
  return new Promise((done) => {
    stream.compose(process.stdout.isTTY ? spec : tap).on('end', () => done({ failed, hung: [...hung] })).pipe(process.stdout);
  });
}

const files = testFiles(process.argv.slice(2));
if (files.length === 0) {
  console.error(`node_test.mjs: no test files in ${process.argv.slice(2).join(' ') || '(no paths given)'}`);
  process.exit(1);
}
let { failed, hung } = await runFiles(files);
if (failed === 0 && hung.length > 0) {
  console.error(`\nnode_test.mjs: HUNG past ${LIMIT_MS / 1000} s, so stopped: ${hung.join(', ')}. Running ${hung.length === 1 ? 'it' : 'them'} once more.\n`);
  ({ failed, hung } = await runFiles(hung));
}
if (failed > 0 || hung.length > 0) {
  console.error(`\nnode_test.mjs: ${failed} failed${hung.length ? `, hung: ${hung.join(', ')}` : ''}`);
  process.exit(1);
}
