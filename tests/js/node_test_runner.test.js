// scripts/node_test.mjs, the runner scripts/test.sh uses: a test file whose process never ends
// is stopped at the limit, named, and run once more (passing then, the run passes); one that
// hangs twice fails the run; a failing test is never run again. Each case is a folder of small
// test files written here, run with a 1.5 s limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const RUNNER = new URL('../../scripts/node_test.mjs', import.meta.url).pathname;

// A file whose one test passes, then whose process stays alive (an interval) on its first `hangs` runs.
const hangingFile = (dir, hangs) => `
import { test } from 'node:test';
import { appendFileSync, readFileSync } from 'node:fs';
const runs = '${join(dir, 'runs')}';
appendFileSync(runs, 'x');
test('passes', () => {});
if (readFileSync(runs, 'utf8').length <= ${hangs}) setInterval(() => {}, 1000);
`;

function runFolder(files) {
  const dir = mkdtempSync(join(tmpdir(), 'node-test-runner-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text(dir));
    // Without NODE_TEST_CONTEXT, which node --test sets in this file's process: a runner that
    // inherits it reports to a parent instead of running its files.
    const { NODE_TEST_CONTEXT, ...env } = process.env;
    const r = spawnSync(process.execPath, [RUNNER, dir], { encoding: 'utf8', env: { ...env, NODE_TEST_LIMIT_MS: '1500' }, timeout: 60_000 });
    const runs = existsSync(join(dir, 'runs')) ? readFileSync(join(dir, 'runs'), 'utf8').length : 0;
    return { status: r.status, stderr: r.stderr, stdout: r.stdout, runs };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const passing = () => "import { test } from 'node:test';\ntest('ok', () => {});\n";

test('a file that hangs once is stopped, named and run again: the run passes, saying so', () => {
  const r = runFolder({ 'a.test.mjs': passing, 'hang.test.mjs': (dir) => hangingFile(dir, 1) });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.runs, 2);
  assert.match(r.stderr, /HUNG past 1\.5 s, so stopped: .*hang\.test\.mjs\. Running it once more/);
});

test('a file that hangs twice fails the run, named', () => {
  const r = runFolder({ 'hang.test.mjs': (dir) => hangingFile(dir, 2) });
  assert.equal(r.status, 1);
  assert.equal(r.runs, 2);
  assert.match(r.stderr, /0 failed, hung: .*hang\.test\.mjs/);
});

test('a failing test fails the run and is not run again', () => {
  const r = runFolder({
    'fails.test.mjs': (dir) => `import { test } from 'node:test';\nimport { appendFileSync } from 'node:fs';\n`
      + `appendFileSync('${join(dir, 'runs')}', 'x');\ntest('fails', () => { throw new Error('no'); });\n`,
    'a.test.mjs': passing,
  });
  assert.equal(r.status, 1);
  assert.equal(r.runs, 1);
  assert.doesNotMatch(r.stderr, /HUNG/);
  assert.match(r.stderr, /1 failed/);
});
