// Part 2 of the packed-package test: the tarball installed into a fresh Node app, which imports
// it as users do and runs the fixture cases (app/node_main.mjs); its report checked here.
import { copyFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeApp, npmInstall } from './apps.mjs';
import { describeRun, exec } from './processes.mjs';
import { check, info, require_, step } from './reporting.mjs';
import { checkReport } from './report_checks.mjs';
import { HERE, PERTURB } from './settings.mjs';

export async function nodePart(root, tarball, cases) {
  step('2/6 Node app: npm install <tarball>, import from "webattention"');
  const app = join(root, 'node-app');
  makeApp(app, 'webattention-node-app', cases);
  copyFileSync(join(HERE, 'app/node_main.mjs'), join(app, 'main.mjs'));
  const installed = await npmInstall(app, tarball);
  const r = await exec(process.execPath, ['main.mjs'], {
    cwd: app, timeoutMs: 30_000, env: { ...process.env, WA_PKG_TEST_PERTURB: String(PERTURB) },
  });
  const line = r.stdout.split('\n').find((l) => l.startsWith('REPORT '));
  require_('node main.mjs ran', r.code === 0 && line, r.code === 0 && line ? '' : describeRun(r));
  const report = JSON.parse(line.slice(7));
  const expectedEntry = join(installed, 'web/src/node.js');
  if (report.resolved === null) info('import.meta.resolve unavailable (Node < 20): entry resolution not checked');
  else {
    check('"webattention" resolves to the installed node entry (exports "node" condition)',
      fileURLToPath(report.resolved) === expectedEntry, relative(app, fileURLToPath(report.resolved)));
  }
  checkReport('node', report, cases);
}
