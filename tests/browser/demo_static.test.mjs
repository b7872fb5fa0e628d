// The published form of the demo: `npm run build:demo` (scripts/build_demo.mjs) writes a static
// folder; a plain static server (tests/package/static_server.mjs: no COOP/COEP, no knowledge of
// the repository) hosts it under a sub-path, and the page must load, compute every panel, run
// the model and the backend comparison from that copy alone (the worker pool's files included:
// not isolated), in each engine of browsers.mjs, with no console error and no failed request: it
// offers no peer it does not have (no bench/) and shows its documents rendered.
//   Run: node --test tests/browser/demo_static.test.mjs      (needs `bash scripts/build.sh` first)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, openDemoPage } from './harness.mjs';
import { ENGINES, launchBrowser } from './browsers.mjs';
import { compareBackends } from './demo_compare.mjs';
import { generate } from './demo_generation.mjs';
import { serveStatic } from '../package/static_server.mjs';

const SUB_PATH = 'some/sub/path/';

let site;
let server;

before(async () => {
  site = mkdtempSync(join(tmpdir(), 'webattention-demo-site-'));
  execFileSync(process.execPath, [join(ROOT, 'scripts/build_demo.mjs'), join(site, SUB_PATH)], { stdio: 'pipe' });
  server = await serveStatic(site);
});
after(async () => {
  await server?.close();
  if (site) rmSync(site, { recursive: true, force: true });
});

describe('static demo folder (npm run build:demo)', () => {

  test('the folder holds the page, the package files it imports and the model; nothing from bench/ or tests/', () => {
    const root = join(site, SUB_PATH);
    for (const file of ['index.html', 'web/demo/index.html', 'web/demo/compare_backends.js', 'web/src/browser.js',
      'web/dist/browser_modules.js', 'web/dist/webattention_core.wasm', 'web/model/model.safetensors', 'docs/attention-math.md',
      'README.md', 'web/model/README.md', 'web/demo/doc.html']) {
      assert.ok(existsSync(join(root, file)), `${file} is missing from the static folder`);
    }
    for (const file of ['bench', 'tests', 'web/model/load_node.js']) assert.ok(!existsSync(join(root, file)), `${file} should not be copied`);
  });

});

for (const engine of ENGINES) describe(`static demo folder in ${engine}`, { timeout: 90_000 }, () => {
  let browser;
  before(async () => {
    browser = await launchBrowser(engine);
  });
  after(() => browser?.close());

  test('served from a sub-path by a plain static server: panels compute, the model runs, engines compare; no console error, no 404', async (t) => {
    // The folder's index.html forwards to web/demo/: every URL from there on is relative.
    const { page, problems } = await openDemoPage(browser, `${server.url}${SUB_PATH}`);
    assert.equal(new URL(page.url()).pathname, `/${SUB_PATH}web/demo/`);
    const d = await page.evaluate(() => ({ ...document.body.dataset, statusText: document.getElementById('status').textContent }));
    assert.equal(d.status, 'ok', d.statusText);
    assert.equal(d.peers, undefined, 'the static copy offers no bench/ peers');
    assert.match(await page.textContent('#out-shape'), /^\[1, 32, 64\]/);
    assert.ok(Number(d.convMaxDiff) < 1e-5 && Number(d.bilinearMaxDiff) < 1e-5, JSON.stringify(d));
    const run = await generate(page, 60);
    assert.equal(run.genStatus, 'done', run.statusText);
    const rows = await compareBackends(page, '128,256,4');
    const facts = await page.evaluate(() => ({ ...document.body.dataset }));
    t.diagnostic(`static copy in ${engine}: module ${facts.machineModule}, isolated ${facts.machineIsolated}, `
      + rows.map((r) => `${r.backend}: ${r.available ? `${r.ms.toFixed(2)} ms` : r.note.split(' (')[0]}`).join('; '));
    assert.equal(facts.machineIsolated, '0', 'a plain static server sends no COOP/COEP');
    assert.match(await page.textContent('#m-isolated'), /^no/);
    assert.ok(!facts.machineModule.startsWith('mt'), `pthreads module without isolation: ${facts.machineModule}`);
    assert.ok(rows[0].available && rows[0].gflops > 0, JSON.stringify(rows[0]));
    if (Number(facts.machineThreads) > 1) assert.match(rows[1].backend, /threads \(worker pool\)/);
    assert.deepEqual(rows.map((r) => r.backend.split(/[ ,(]/)[0]), ['wasm', 'wasm', 'webgpu'], 'no peer row without bench/');
    const notes = await page.evaluate(() => document.body.innerText);
    assert.doesNotMatch(notes, /cd bench|bench\/|node_modules|not loaded/, 'a developer note on the static page');
    // The README link: rendered, as every document the page links to.
    await page.goto(new URL('doc.html?doc=readme', page.url()).href, { timeout: 20_000 });
    await page.waitForFunction(() => document.body.dataset.status !== 'loading', null, { timeout: 10_000 });
    assert.equal(await page.evaluate(() => document.body.dataset.status), 'ok');
    assert.deepEqual(problems, [], problems.join('\n'));
    await page.close();
  });
});
