#!/usr/bin/env node
// npm run build:demo: the demo as a static folder any static server can host (no COOP/COEP
// needed: without them the package runs its worker pool instead of the pthreads module).
//   node scripts/build_demo.mjs [outDir]      (default build/demo)
// The folder keeps the repository's layout (web/demo, web/src, web/dist, web/model, docs), so
// every path the page uses stays relative and the folder works from any sub-path; its index.html
// forwards to web/demo/. Needs the WASM build (web/dist): `npm run build` first.
// The page's scripts (demo.js, doc_page.js) are bundled by esbuild in place, the parts the page
// imports lazily (the package, the model, the backend comparison) as chunks beside them: a
// visitor's browser makes 102 requests before its first result from the files as written, the
// deeper of them one round trip after another (bench/cold_start/browser_cold_start.mjs --static).
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { DOCUMENTS } from '../web/demo/documents.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(process.argv[2] ?? join(ROOT, 'build/demo'));

// What the page loads: the demo, the package's browser code and WASM modules it imports, the
// model the generation panel fetches, and the documents it shows rendered (doc.html) with their
// images.
const COPIED = ['web/demo', 'web/src', 'web/dist', 'web/model', ...Object.values(DOCUMENTS), 'docs/images', 'LICENSE']
  .filter((path) => path !== 'docs/images' || existsSync(join(ROOT, path)));
// The repository's page offers the benchmark's peers (bench/node_modules, served by npm start);
// a static copy has no bench/, so its page must not even look for them (no 404s, no notes).
const PEERS_ATTRIBUTE = ' data-peers="bench"';
// Node-only or build-time files that a browser never asks for.
const SKIPPED = /(^|\/)(load_node\.js|generate\.mjs|train_log\.txt|modules\.d\.ts)$/;

if (!existsSync(join(ROOT, 'web/dist/browser_modules.js'))) {
  console.error('build:demo: web/dist/browser_modules.js is missing: build the WASM modules first (npm run build)');
  process.exit(1);
}
if (out === ROOT || ROOT.startsWith(`${out}/`)) {
  console.error(`build:demo: refusing to replace ${out}, which holds the repository`);
  process.exit(2);
}
rmSync(out, { recursive: true, force: true });
for (const path of COPIED) {
  mkdirSync(dirname(join(out, path)), { recursive: true });
  cpSync(join(ROOT, path), join(out, path), {
    recursive: true,
    filter: (source) => !SKIPPED.test(source.slice(ROOT.length).replaceAll('\\', '/')),
  });
}
await bundlePageScripts();
const page = join(out, 'web/demo/index.html');
const html = readFileSync(page, 'utf8');
if (!html.includes(PEERS_ATTRIBUTE)) {
  console.error(`build:demo: web/demo/index.html has no${PEERS_ATTRIBUTE} to remove`);
  process.exit(1);
}
writeFileSync(page, html.replace(PEERS_ATTRIBUTE, ''));
writeFileSync(join(out, 'index.html'), `<!doctype html>
<meta charset="utf-8">
<title>webattention demo</title>
<link rel="icon" href="data:,">
<meta http-equiv="refresh" content="0; url=web/demo/">
<a href="web/demo/">webattention demo</a>
`);
console.log(`build:demo: wrote ${out} (open web/demo/ under any static server)`);

// Each page script with what it imports, over the copied one. The bundles sit in web/demo/, as
// deep as web/src/ and web/model/, so the relative URLs their code builds at run time
// (new URL('../dist/…', import.meta.url), '../model/…') still name the same files. The one module
// kept apart is web/dist/browser_modules.js, whose URLs are relative to web/dist/ itself: the
// bundles import it by the path the package's code writes ('../dist/browser_modules.js'). The
// copies of web/src/ stay: the pool's workers (web/dist/pool_worker_*.js) import from them.
async function bundlePageScripts() {
  await build({
    entryPoints: ['web/demo/demo.js', 'web/demo/doc_page.js'].map((file) => join(ROOT, file)),
    outdir: join(out, 'web/demo'),
    allowOverwrite: true,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'error',
    plugins: [{
      name: 'browser-modules-apart',
      setup(b) {
        b.onResolve({ filter: /\/dist\/browser_modules\.js$/ }, (args) => ({ path: args.path, external: true }));
      },
    }],
  });
}
