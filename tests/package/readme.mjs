#!/usr/bin/env node
// The README's code blocks alone (readme_part.mjs), against the package as this working tree packs
// it now: `npm pack --ignore-scripts`, so web/dist/ must be built (bash scripts/build.sh). The
// whole package test (run.mjs) runs the same part on a tarball built from a clean copy.
//   node tests/package/readme.mjs                    every block
//   node tests/package/readme.mjs node:gpt2 browser  the apps named (KIND:APP), or every app of a KIND
import { join } from 'node:path';
import { makeTempRoot } from './files.mjs';
import { cleanup, describeRun, exec } from './processes.mjs';
import { readmePart } from './readme_part.mjs';
import { check, finish, require_ } from './reporting.mjs';
import { REPO } from './settings.mjs';

try {
  const root = makeTempRoot();
  const r = await exec('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', root, '--loglevel=error'], { cwd: REPO, timeoutMs: 60_000 });
  require_('npm pack --ignore-scripts', r.code === 0, r.code === 0 ? '' : describeRun(r));
  await readmePart(root, join(root, JSON.parse(r.stdout)[0].filename), join(REPO, 'README.md'), { only: process.argv.slice(2) });
} catch (e) {
  check('README test ran', false, e.stack);
} finally {
  await cleanup();
  finish();
}
