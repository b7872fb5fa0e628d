// Parts 3 and 4 of the packed-package test: the tarball installed into a fresh Vite app, built
// with `vite build` (Vite's defaults) and served from dist/, then run under the Vite dev server;
// both pages in headless Chromium.
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeApp, npmInstall } from './apps.mjs';
import { runPage } from './browser_page.mjs';
import { listFiles } from './files.mjs';
import { describeRun, exec, onCleanup, tail, withTimeout } from './processes.mjs';
import { check, info, require_, step } from './reporting.mjs';
import { HERE, VITE } from './settings.mjs';
import { serveStatic } from './static_server.mjs';

/**
 * Part 3's set-up: the app folder and its install. Resolves to { app, installed }; the driver
 * runs the dev-server part on that app even if the build part fails later.
 */
export async function installWebApp(root, tarball, cases) {
  step('3/4 Vite app: npm install <tarball>, vite build, serve dist/, headless Chromium');
  const app = join(root, 'web-app');
  makeApp(app, 'webattention-web-app', cases);
  copyFileSync(join(HERE, 'app/browser_main.js'), join(app, 'main.js'));
  copyFileSync(join(HERE, 'app/index.html'), join(app, 'index.html'));
  const installed = await npmInstall(app, tarball);
  return { app, installed };
}

export async function viteBuildPart({ app, installed }, cases) {
  // No vite.config: a production build must work with Vite's defaults.
  const b = await exec(process.execPath, [VITE, 'build', '--logLevel', 'warn'], { cwd: app, timeoutMs: 60_000 });
  require_('vite build succeeded', b.code === 0, b.code === 0 ? tail(b.stdout + b.stderr, 600) : describeRun(b));
  const dist = join(app, 'dist');
  const built = listFiles(dist);
  info(`dist: ${built.join(' ')}`);
  const wasmAssets = built.filter((f) => f.endsWith('.wasm'));
  // The single-threaded modules (SIMD, relaxed SIMD, scalar fallback) ship; the page fetches
  // only the one it can run. (The pthreads ones are loaded by a URL bundlers do not see.)
  const singleThreaded = JSON.parse(readFileSync(join(installed, 'web/modules.json'), 'utf8')).modules.filter((m) => !m.threads);
  const pkgWasms = singleThreaded.map((m) => readFileSync(join(installed, 'web/dist', `${m.stem}.wasm`)));
  check(`vite emitted the ${singleThreaded.length} single-threaded package .wasm modules as assets, unchanged`,
    wasmAssets.length === singleThreaded.length
    && pkgWasms.every((w) => wasmAssets.some((f) => readFileSync(join(dist, f)).equals(w))), wasmAssets.join(', ') || 'no .wasm in dist');
  const js = built.filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(dist, f), 'utf8')).join('\n');
  check('bundle uses the browser entry (no node:fs / readFile in it)', !/node:fs|readFile\(/.test(js));

  const server = await serveStatic(dist);
  onCleanup(() => server.close());
  info(`serving dist/ at ${server.url}`);
  await runPage('browser (vite build)', server.url, cases);
}

export async function devServerPart(app, cases) {
  step('4/4 same app under the Vite dev server (optimizeDeps.exclude, as Vite needs for this package)');
  // Vite's dependency pre-bundling moves the package's JS to node_modules/.vite/deps/, which
  // breaks new URL('../dist/webattention_core.wasm', import.meta.url) (the dev server answers
  // index.html, "expected magic word"): users must exclude the package, as with any Emscripten
  // module that loads its .wasm this way.
  const { createServer } = await import('vite');
  const server = await withTimeout(createServer({
    root: app,
    configFile: false,
    logLevel: 'warn',
    clearScreen: false,
    optimizeDeps: { exclude: ['webattention'] },
    server: { host: '127.0.0.1', port: 0, strictPort: false, watch: null, hmr: false },
  }), 30_000, 'vite createServer');
  onCleanup(() => server.close());
  await withTimeout(server.listen(), 30_000, 'vite dev server listen');
  const url = server.resolvedUrls?.local?.[0];
  require_('vite dev server listening', Boolean(url), url);
  info(`vite dev server at ${url}`);
  await runPage('browser (vite dev)', url, cases);
}
