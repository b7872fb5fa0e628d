// Parts 3 to 5 of the packed-package test: the tarball installed into a fresh Vite app whose page
// and own Web Worker (app/app_worker.js) import it. 3: `vite build` with Vite's defaults (no
// config: the worker's format is 'iife'), dist/ served plain, cross-origin isolated, and with the
// package's files on another origin (configure({ wasmPaths })), plain and isolated. 4: the Vite
// dev server as the package's README says (optimizeDeps.exclude), plain and isolated. 5: the
// dev server without it, where the package must say what to do. Every page in headless Chromium and
// Firefox ESR.
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeApp, npmInstall } from './apps.mjs';
import { runLoadErrorPage, runPage } from './browser_page.mjs';
import { listFiles } from './files.mjs';
import { describeRun, exec, onCleanup, tail, withTimeout } from './processes.mjs';
import { check, info, require_, step } from './reporting.mjs';
import { HERE, VITE } from './settings.mjs';
import { CROSS_ORIGIN_ISOLATED as ISOLATED, serveStatic } from './static_server.mjs';

// What a server of the package's files for another origin must send: CORS alone (the glue, the
// .wasm and the pool worker are fetched in CORS mode, which an isolated page accepts without CORP).
const OTHER_ORIGIN = { 'access-control-allow-origin': '*' };

/**
 * Part 3's set-up: the app folder and its install. Resolves to { app, installed }; the driver
 * runs the dev-server parts on that app even if the build part fails later.
 */
export async function installWebApp(root, tarball, cases) {
  step('3/6 Vite app (its page and its own worker import the package): npm install <tarball>, vite build, serve dist/, headless Chromium and Firefox');
  const app = join(root, 'web-app');
  makeApp(app, 'webattention-web-app', cases);
  copyFileSync(join(HERE, 'app/browser_main.js'), join(app, 'main.js'));
  copyFileSync(join(HERE, 'app/app_worker.js'), join(app, 'app_worker.js'));
  copyFileSync(join(HERE, 'app/index.html'), join(app, 'index.html'));
  const installed = await npmInstall(app, tarball);
  return { app, installed };
}

async function serve(root, headers) {
  const server = await serveStatic(root, headers);
  onCleanup(() => server.close());
  return server.url;
}

export async function viteBuildPart({ app, installed }, cases) {
  // No vite.config: a production build must work with Vite's defaults, app worker included.
  const b = await exec(process.execPath, [VITE, 'build', '--logLevel', 'warn'], { cwd: app, timeoutMs: 60_000 });
  require_('vite build (default config: worker.format \'iife\') succeeded', b.code === 0, b.code === 0 ? tail(b.stdout + b.stderr, 600) : describeRun(b));
  const dist = join(app, 'dist');
  const built = listFiles(dist);
  info(`dist: ${built.join(' ')}`);
  const wasmAssets = built.filter((f) => f.endsWith('.wasm'));
  // Every module ships, the pthreads ones too (isolated pages load them); a page fetches only
  // the one it runs.
  const modules = JSON.parse(readFileSync(join(installed, 'web/modules.json'), 'utf8')).modules;
  const pkgWasms = modules.map((m) => readFileSync(join(installed, 'web/dist', `${m.stem}.wasm`)));
  check(`vite emitted the ${modules.length} package .wasm modules as assets, unchanged`,
    wasmAssets.length === modules.length
    && pkgWasms.every((w) => wasmAssets.some((f) => readFileSync(join(dist, f)).equals(w))), wasmAssets.join(', ') || 'no .wasm in dist');
  const js = built.filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(dist, f), 'utf8')).join('\n');
  check('bundle uses the browser entry (no node:fs / readFile in it)', !/node:fs|readFile\(/.test(js));

  const plain = await serve(dist);
  const isolated = await serve(dist, ISOLATED);
  // Another origin (a second port, as a CDN would be) serving the installed package as it is.
  const otherOrigin = `${await serve(installed, OTHER_ORIGIN)}web/dist/`;
  info(`serving dist/ at ${plain} and, cross-origin isolated, at ${isolated}; the package's files at ${otherOrigin}`);
  await runPage('browser (vite build)', plain, cases);
  await runPage('browser (vite build, isolated)', isolated, cases, { threadsModule: true });
  await runPage('browser (vite build, wasmPaths on another origin)', plain, cases, { wasmPaths: otherOrigin });
  await runPage('browser (vite build, isolated, wasmPaths on another origin)', isolated, cases, { wasmPaths: otherOrigin, threadsModule: true });
}

/**
 * A Vite dev server on `app` (Vite's createServer with `optimizeDeps`, and `headers` on every
 * answer; the app's own vite.config.js only with configFile: true); resolves to its URL.
 */
export async function devServer(app, { optimizeDeps, cacheDir, headers = {}, configFile = false }) {
  const { createServer } = await import('vite');
  const server = await withTimeout(createServer({
    root: app,
    ...(configFile ? {} : { configFile: false }),
    logLevel: 'error',
    clearScreen: false,
    cacheDir,
    optimizeDeps,
    server: { host: '127.0.0.1', port: 0, strictPort: false, watch: null, hmr: false, headers },
  }), 30_000, 'vite createServer');
  onCleanup(() => server.close());
  await withTimeout(server.listen(), 30_000, 'vite dev server listen');
  const url = server.resolvedUrls?.local?.[0];
  require_('vite dev server listening', Boolean(url), url);
  info(`vite dev server at ${url}`);
  return url;
}

export async function devServerPart(app, cases) {
  step('4/6 same app under the Vite dev server (optimizeDeps.exclude, as the package\'s README says)');
  // Vite's dependency pre-bundling moves the package's JS to node_modules/.vite/deps/, which
  // breaks new URL('../dist/webattention_core.wasm', import.meta.url) (the dev server answers
  // index.html): users must exclude the package, as with any module that loads its .wasm this way.
  const excluded = { exclude: ['webattention'] };
  await runPage('browser (vite dev)', await devServer(app, { optimizeDeps: excluded, cacheDir: join(app, '.vite-excluded') }), cases);
  // Cross-origin isolated: the pthreads module's worker must start under the dev server too,
  // which rewrites every .js file it serves into a module.
  await runPage('browser (vite dev, isolated)', await devServer(app, { optimizeDeps: excluded, cacheDir: join(app, '.vite-excluded'), headers: ISOLATED }), cases, { threadsModule: true });
}

export async function devServerWithoutExcludePart(app) {
  step('5/6 same app under the Vite dev server without optimizeDeps.exclude: the package names the fix');
  await runLoadErrorPage('browser (vite dev, pre-bundled)', await devServer(app, { optimizeDeps: {}, cacheDir: join(app, '.vite-prebundled') }));
}
