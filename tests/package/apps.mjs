// The temp apps of the packed-package test: the fixture cases they run, a fresh app folder (the
// test contract and the report built on it copied in) and `npm install <tarball>` into it.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describeRun, exec } from './processes.mjs';
import { info, require_ } from './reporting.mjs';
import { CASE_NAMES, FIXTURES, HERE, REPO } from './settings.mjs';

export function loadCases() {
  const all = FIXTURES.flatMap((file) => JSON.parse(readFileSync(file, 'utf8')).cases);
  return CASE_NAMES.map((name) => {
    const c = all.find((x) => x.name === name);
    if (!c) throw new Error(`fixture case '${name}' not found in ${FIXTURES.map((f) => relative(REPO, f)).join(', ')}`);
    return c;
  });
}

/** A fresh app folder with package.json, the test contract, the report built on it and the cases. */
export function makeApp(dir, name, cases) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name, version: '0.0.0', private: true, type: 'module' }, null, 2)}\n`);
  const contract = join(REPO, 'tests/contract');
  mkdirSync(join(dir, 'contract'));
  for (const f of readdirSync(contract)) copyFileSync(join(contract, f), join(dir, 'contract', f));
  copyFileSync(join(HERE, 'app/report.mjs'), join(dir, 'report.mjs'));
  writeFileSync(join(dir, 'cases.json'), JSON.stringify(cases));
}

export async function npmInstall(appDir, tarball) {
  const base = ['install', tarball, '--no-audit', '--no-fund', '--loglevel=error'];
  let r = await exec('npm', [...base, '--offline'], { cwd: appDir, timeoutMs: 60_000 });
  if (r.code !== 0) {
    info(`npm install --offline failed (${describeRun(r).split('\n')[0]}); retrying without --offline`);
    r = await exec('npm', base, { cwd: appDir, timeoutMs: 60_000 });
  }
  require_(`npm install <tarball> in ${relative(tmpdir(), appDir)}`, r.code === 0, r.code === 0 ? '' : describeRun(r));
  const installed = join(appDir, 'node_modules/webattention');
  require_('installed package has web/dist/webattention_core.wasm',
    existsSync(join(installed, 'web/dist/webattention_core.wasm')));
  return installed;
}

