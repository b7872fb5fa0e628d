// The module manifest (web/modules.json) against everything that reads it: the generated loaders
// in web/dist/, the built modules, the module choice (variant.js), the build scripts and the
// package's `files`. A module added to the manifest and built passes these without other edits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIST, readManifest, render } from '../../scripts/gen_modules.mjs';
import { THREADS_VARIANTS, moduleEntry, pickVariant } from '../../web/src/wasm/variant.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const modules = readManifest();

test('web/dist holds the loaders generated from the manifest as it is now, and every module built', () => {
  for (const [name, text] of Object.entries(render(modules))) {
    assert.equal(readFileSync(join(DIST, name), 'utf8'), text, `web/dist/${name} is stale: run bash scripts/build.sh`);
  }
  for (const m of modules) {
    const files = [`${m.stem}.mjs`, `${m.stem}.wasm`, ...(m.threads ? [`${m.stem}.worker.js`] : [])];
    for (const f of files) assert.ok(existsSync(join(DIST, f)), `web/dist/${f} (module '${m.name}') is not built`);
  }
});

test('the public module behaviour: pthreads modules fall back to their single-threaded kind; Node runs only single-threaded ones', () => {
  const names = modules.map((m) => m.name);
  for (const name of ['simd', 'relaxed', 'scalar', 'mt', 'mt-relaxed']) assert.ok(names.includes(name), name);
  assert.deepEqual(THREADS_VARIANTS, modules.filter((m) => m.threads).map((m) => m.name));
  assert.ok(THREADS_VARIANTS.includes('mt') && THREADS_VARIANTS.includes('mt-relaxed'));
  assert.equal(moduleEntry('mt').fallback, 'simd');
  assert.equal(moduleEntry('mt-relaxed').fallback, 'relaxed');
  for (const m of modules) {
    assert.equal(pickVariant(m.name, { threadsModule: true }), m.name);
    if (m.threads) assert.throws(() => pickVariant(m.name), /WEBATTENTION_WASM: expected/);
    else assert.equal(pickVariant(m.name), m.name);
  }
  assert.throws(() => pickVariant('avx512', { threadsModule: true }),
    new RegExp(`expected ${names.map((n) => `'${n}'`).join(' or ')}, got 'avx512'`));
});

test('the build scripts and the package read the same list', () => {
  const variants = execFileSync('bash', ['-c', 'source scripts/env.sh && echo "$WASM_VARIANTS"'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(variants.trim(), modules.map((m) => m.name).join(' '));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  for (const f of ['web/dist/', 'web/modules.json', 'web/src/', 'web/index.d.ts', 'web/types/', 'LICENSE']) assert.ok(pkg.files.includes(f), f);
  assert.equal(pkg.scripts.prepack, 'bash scripts/build.sh');
});

test('a manifest the loaders could not use is refused', () => {
  const dir = mkdtempSync(join(tmpdir(), 'webattention-manifest-'));
  const write = (list) => {
    const file = join(dir, 'modules.json');
    writeFileSync(file, JSON.stringify({ modules: list }));
    return file;
  };
  const ok = JSON.parse(readFileSync(join(ROOT, 'web/modules.json'), 'utf8')).modules;
  try {
    const cases = [
      [[...ok, { ...ok[0], name: 'simd2' }], /same simd \/ relaxed \/ threads/],
      [[...ok, ok[1]], /listed twice/],
      [ok.map((m) => (m.name === 'mt' ? { ...m, fallback: 'mt-relaxed' } : m)), /fallback must name a single-threaded module/],
      [ok.map((m) => (m.name === 'mt' ? { ...m, worker: 'pool_worker_mt.js' } : m)), /worker: a file name/],
      [ok.filter((m) => m.name !== 'scalar'), /no module without simd/],
    ];
    for (const [list, error] of cases) assert.throws(() => readManifest(write(list)), error);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
