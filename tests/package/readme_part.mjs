// The packed-package test's README part: every fenced code block of the package's README.md run
// as a user would paste it (readme_blocks.mjs reads the blocks and their tags), against the
// installed tarball: Node blocks in a fresh `npm init -y` project, browser blocks in that project
// served as it is (its node_modules/ included) in headless Chromium, Vite blocks in a Vite app
// (the "Vanilla" template's package.json and index.html) through `vite build`, served, and the
// Vite dev server with the app's own vite.config.js.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { npmInstall } from './apps.mjs';
import { openPage } from './browser_page.mjs';
import { describeRun, exec, onCleanup, tail } from './processes.mjs';
import { readmeAppsOf } from './readme_blocks.mjs';
import { check, info, require_, step } from './reporting.mjs';
import { VITE } from './settings.mjs';
import { serveStatic } from './static_server.mjs';
import { devServer } from './vite_app.mjs';

// What a page gets when its app's blocks bring no index.html: the browser apps load main.js as
// the README says; the Vite apps have the Vanilla template's (which loads /main.js).
const PAGE = '<!doctype html>\n<html lang="en">\n  <head>\n    <meta charset="utf-8" />\n    <link rel="icon" href="data:," />\n  </head>\n'
  + '  <body>\n    <script type="module" src="SRC"></script>\n  </body>\n</html>\n';
const PAGE_SRC = { browser: 'main.js', vite: '/main.js' };
const PAGE_TIMEOUT_MS = 30_000;

/** A fresh project for the app: `npm init -y` (Node, browser) or the Vite template's files, the tarball installed. */
async function makeProject(dir, app, tarball) {
  mkdirSync(dir, { recursive: true });
  if (app.kind === 'vite') {
    writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: `readme-${app.name}`, private: true, version: '0.0.0', type: 'module' }, null, 2)}\n`);
  } else {
    const r = await exec('npm', ['init', '-y'], { cwd: dir, timeoutMs: 30_000 });
    require_(`${app.kind}:${app.name}: npm init -y`, r.code === 0, r.code === 0 ? '' : describeRun(r));
    info(`npm init -y wrote "type": ${JSON.stringify(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).type)}`);
  }
  await npmInstall(dir, tarball);
  for (const [file, text] of app.files) writeFileSync(join(dir, file), text);
  if (app.kind !== 'node' && !app.files.has('index.html')) writeFileSync(join(dir, 'index.html'), PAGE.replace('SRC', PAGE_SRC[app.kind]));
}

async function runNodeApp(where, dir, app) {
  const [file] = app.files.keys();
  const r = await exec(process.execPath, [file], { cwd: dir, timeoutMs: 30_000 });
  info(`${where}: node ${file} printed ${JSON.stringify(r.stdout.trim())}`);
  const ok = r.code === 0 && r.stderr.trim() === '';
  check(`${where}: node ${file} exits 0 with nothing on stderr`, ok, ok ? '' : describeRun(r));
  for (const text of app.prints) check(`${where}: prints ${JSON.stringify(text)}`, r.stdout.includes(text));
}

// The browser's own favicon request (a 404 where the page has no icon) is no part of the snippet:
// it neither ends the wait for the snippet's output nor counts as its error.
const FAVICON_404 = /^error: Failed to load resource.*\/favicon\.ico\)$/;
const isSnippetError = (line) => line.startsWith('error:') && !FAVICON_404.test(line);

/** Waits until the console holds every `prints` text (or, with none, the page is idle) or a page error came. */
const settleOn = (prints) => async (page, { consoleLines, pageErrors }) => {
  if (!prints.length) {
    await page.waitForLoadState('networkidle', { timeout: PAGE_TIMEOUT_MS });
    return;
  }
  const t0 = Date.now();
  while (Date.now() - t0 < PAGE_TIMEOUT_MS && !pageErrors.length && !consoleLines.some(isSnippetError)
    && !prints.every((p) => consoleLines.some((l) => l.includes(p)))) {
    await new Promise((r) => setTimeout(r, 100));
  }
};

async function runPage(where, url, app) {
  const { report, responses, consoleLines, pageErrors } = await openPage('chromium', where, url, settleOn(app.prints));  // the README's browser blocks: Chromium, as the issue asks; the app pages run in every engine
  require_(`${where}: page opened`, !report?.error, report?.error);
  const bad = responses.filter((r) => r.status >= 400);
  const consoleErrors = consoleLines.filter(isSnippetError);
  check(`${where}: no page errors, console errors or HTTP errors`,
    pageErrors.length === 0 && bad.length === 0 && consoleErrors.length === 0,
    [...pageErrors, ...consoleErrors, ...bad.map((r) => `${r.status} ${r.url}`)].join(' | '));
  for (const text of app.prints) {
    const shown = consoleLines.some((l) => l.includes(text));
    check(`${where}: console shows ${JSON.stringify(text)}`, shown, shown ? '' : consoleLines.join(' | ') || 'no console output');
  }
}

async function serve(root) {
  const server = await serveStatic(root);
  onCleanup(() => server.close());
  return server.url;
}

async function runViteApp(where, dir, app) {
  const b = await exec(process.execPath, [VITE, 'build', '--logLevel', 'warn'], { cwd: dir, timeoutMs: 60_000 });
  if (check(`${where}: vite build`, b.code === 0, b.code === 0 ? tail(b.stdout + b.stderr, 400) : describeRun(b))) {
    await runPage(`${where} (vite build)`, await serve(join(dir, 'dist')), app);
  }
  await runPage(`${where} (vite dev)`, await devServer(dir, { configFile: existsSync(join(dir, 'vite.config.js')) }), app);
}

/**
 * Runs every README block as its tag says; one failed app does not stop the others. `only`: app
 * ids ('node:gpt2') or kinds ('node') to run alone, for a contributor checking the blocks they wrote.
 */
export async function readmePart(root, tarball, readme, { only = [] } = {}) {
  step('6/6 README: every fenced code block run as pasted (Node, browser, Vite)');
  const { apps, errors } = readmeAppsOf(readme);
  check('every fenced block of the README is tagged with how it runs', errors.length === 0, errors.join('; '));
  info(`${apps.size} apps: ${[...apps].map(([id, a]) => `${id} (${[...a.files.keys()].join(' + ')})`).join(', ')}`);
  for (const [id, app] of apps) {
    if (only.length && !only.includes(id) && !only.includes(app.kind)) continue;
    const where = `README ${id}`;
    const dir = join(root, 'readme', `${app.kind}-${app.name}`);
    try {
      await makeProject(dir, app, tarball);
      if (app.kind === 'node') await runNodeApp(where, dir, app);
      else if (app.kind === 'browser') await runPage(where, `${await serve(dir)}index.html`, app);
      else await runViteApp(where, dir, app);
    } catch (e) {
      check(`${where} ran`, false, e.message);
    }
  }
}
