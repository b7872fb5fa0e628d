// The published form of the demo: `npm run build:demo` (scripts/build_demo.mjs) writes a static
// folder; a plain static server (tests/package/static_server.mjs: no COOP/COEP, no knowledge of
// the repository) hosts it under a sub-path, and the page must load, compute every panel and run
// the backend comparison from that copy alone (the worker pool's files included: not isolated).
//   Run: node --test tests/browser/demo_static.test.mjs      (needs `bash scripts/build.sh` first)
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, launchChromium, openDemoPage } from './harness.mjs';
import { compareBackends, withoutOrtProbe } from './demo_compare.mjs';
import { serveStatic } from '../package/static_server.mjs';

const SUB_PATH = 'some/sub/path/';

let site;
let server;
let browser;

describe('static demo folder (npm run build:demo)', { timeout: 120_000 }, () => {
  before(async () => {
    site = mkdtempSync(join(tmpdir(), 'webattention-demo-site-'));
    execFileSync(process.execPath, [join(ROOT, 'scripts/build_demo.mjs'), join(site, SUB_PATH)], { stdio: 'pipe' });
    server = await serveStatic(site);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    if (site) rmSync(site, { recursive: true, force: true });
  });

  test('the folder holds the page, the package files it imports and the model; nothing from bench/ or tests/', () => {
    const root = join(site, SUB_PATH);
    for (const file of ['index.html', 'web/demo/index.html', 'web/demo/compare_backends.js', 'web/src/browser.js',
      'web/dist/browser_modules.js', 'web/dist/webattention_core.wasm', 'web/model/model.safetensors', 'docs/attention-math.md']) {
      assert.ok(existsSync(join(root, file)), `${file} is missing from the static folder`);
    }
    for (const file of ['bench', 'tests', 'web/model/load_node.js']) assert.ok(!existsSync(join(root, file)), `${file} should not be copied`);
  });

  test('served from a sub-path by a plain static server: panels compute, backends compare', async (t) => {
    // The folder's index.html forwards to web/demo/: every URL from there on is relative.
    const { page, problems } = await openDemoPage(browser.context, `${server.url}${SUB_PATH}`);
    assert.equal(new URL(page.url()).pathname, `/${SUB_PATH}web/demo/`);
    const d = await page.evaluate(() => ({ ...document.body.dataset, statusText: document.getElementById('status').textContent }));
    assert.equal(d.status, 'ok', d.statusText);
    assert.match(await page.textContent('#out-shape'), /^\[1, 32, 64\]/);
    assert.ok(Number(d.convMaxDiff) < 1e-5 && Number(d.bilinearMaxDiff) < 1e-5, JSON.stringify(d));
    const rows = await compareBackends(page, '128,256,4');
    const facts = await page.evaluate(() => ({ ...document.body.dataset }));
    t.diagnostic(`static copy: module ${facts.machineModule}, isolated ${facts.machineIsolated}, `
      + rows.map((r) => `${r.backend}: ${r.available ? `${r.ms.toFixed(2)} ms` : r.note.split(' (')[0]}`).join('; '));
    assert.equal(facts.machineIsolated, '0', 'a plain static server sends no COOP/COEP');
    assert.match(await page.textContent('#m-isolated'), /^no /);
    assert.ok(!facts.machineModule.startsWith('mt'), `pthreads module without isolation: ${facts.machineModule}`);
    assert.ok(rows[0].available && rows[0].gflops > 0, JSON.stringify(rows[0]));
    if (Number(facts.machineThreads) > 1) assert.match(rows[1].backend, /threads \(worker pool\)/);
    assert.match(rows.at(-1).note, /^not loaded/, 'the static copy has no bench/');
    assert.deepEqual(withoutOrtProbe(problems, false), [], problems.join('\n'));
    await page.close();
  });
});
