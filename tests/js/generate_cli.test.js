// The model's Node command (web/model/generate.mjs) as a user types it: --help, sampling by
// default, a hint to quote the prompt, and one line (no stack trace) for every bad value.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../web/model/generate.mjs', import.meta.url));
const run = (...args) => {
  // The engine flags this test runs under (the relaxed-SIMD module needs one), none of --test's.
  const flags = process.execArgv.filter((a) => a.startsWith('--experimental'));
  const r = spawnSync(process.execPath, [...flags, CLI, ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};

test('--help prints the usage and exits 0', () => {
  const { code, out } = run('--help');
  assert.equal(code, 0);
  assert.match(out, /^usage: node web\/model\/generate\.mjs "PROMPT"/);
  assert.match(out, /--greedy/);
});

test('it samples by default (temperature 0.8, top-k 20), and --greedy is the deterministic choice', () => {
  const sampled = [run('And God said, ', '--tokens', '60', '--seed', '1'), run('And God said, ', '--tokens', '60', '--seed', '2')];
  for (const r of sampled) assert.equal(r.code, 0, r.err);
  assert.ok(sampled.every((r) => r.out.startsWith('And God said, ') && r.out.length > 60));
  assert.notEqual(sampled[0].out, sampled[1].out, 'two seeds, one text: not sampling');
  const greedy = [run('And God said, ', '--tokens', '40', '--greedy', '--seed', '1'), run('And God said, ', '--tokens', '40', '--greedy', '--seed', '2')];
  assert.equal(greedy[0].out, greedy[1].out);
});

test('bad values are one line each, without a stack trace', () => {
  const bad = [
    [['And', 'God', 'said'], /put the prompt in quotes, e\.g\. "And God said"/],
    [['x', '--threads', '0'], /--threads: expected an integer >= 1 or 'auto', got '0'/],
    [['x', '--tokens', '1.5'], /--tokens: expected an integer >= 1, got '1\.5'/],
    [['x', '--temperature', '0'], /--temperature: expected a finite number > 0 \(for greedy decoding, --greedy\)/],
    [['x', '--greedy', '--top-k', '3'], /--temperature and --top-k do not apply/],
    [['x', '--bogus'], /Unknown option '--bogus'/],
    [['x', '--weights-dtype', 'float8'], /OptionError: weightsDtype: expected 'float32' \| 'float16' \| 'bfloat16' \| 'int8' \| 'int4', got string "float8"/],
    [['x', '--cache-dtype', 'bfloat16'], /OptionError: .*dtype.*bfloat16/],
  ];
  for (const [args, message] of bad) {
    const { code, err } = run(...args);
    assert.equal(code, 2, args.join(' '));
    assert.match(err, message);
    assert.doesNotMatch(err, /^\s+at /m, 'a stack trace');
  }
});

test('--threads auto is taken, as the library takes it', () => {
  const { code, out, err } = run('In the beginning', '--tokens', '10', '--threads', 'auto');
  assert.equal(code, 0, err);
  assert.ok(out.startsWith('In the beginning'));
});

test('--weights-dtype float16 --cache-dtype float16: greedy text as float32 gives it, and the dtypes on stderr', () => {
  const f32 = run('And God said, ', '--tokens', '40', '--greedy');
  const f16 = run('And God said, ', '--tokens', '40', '--greedy', '--weights-dtype', 'float16', '--cache-dtype', 'float16');
  for (const r of [f32, f16]) assert.equal(r.code, 0, r.err);
  assert.equal(f16.out, f32.out);
  assert.match(f16.err, /float16 weights, float16 cache\)/);
  assert.match(f32.err, /float32 weights, float32 cache\)/);
});
