#!/usr/bin/env node
// Tiny read-only static file server for the demo (no dependencies).
//   node scripts/serve.mjs [port]        (or PORT=8080; port 0 picks a free one)
// Serves the repository root on loopback only; "/" redirects to /web/demo/. Pages are
// cross-origin isolated (COOP/COEP) unless ISOLATED=0.
// Refuses paths outside the repository and dot-files/-directories (.git, .ci, ...).
import { createServer } from 'node:http';
import { createReadStream, existsSync } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = await realpath(resolve(fileURLToPath(new URL('..', import.meta.url))));
const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1']);
const HOST = process.env.HOST || '127.0.0.1';
const PORT_ARG = process.argv[2] ?? process.env.PORT ?? '8080';
const PORT = Number(PORT_ARG);
const ISOLATED = process.env.ISOLATED !== '0';

if (!LOOPBACK.has(HOST)) {
  console.error(`serve: HOST must be a loopback address (127.0.0.1, ::1, localhost), got '${HOST}'`);
  process.exit(2);
}
if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65535) {
  console.error(`serve: port must be an integer in 0..65535, got '${PORT_ARG}'`);
  process.exit(2);
}

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
};

const inside = (p) => p === ROOT || p.startsWith(ROOT + sep);

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  res.end(body === undefined ? undefined : `${body}\n`);
}

/** Maps a URL path to an existing file inside ROOT, or returns { status, location? }. */
async function resolvePath(urlPath) {
  let decoded;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return { status: 400 };
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return { status: 400 };
  const segments = decoded.split('/').filter(Boolean);
  if (segments.some((s) => s === '..')) return { status: 403 };
  if (segments.some((s) => s.startsWith('.'))) return { status: 404 };
  let file = resolve(ROOT, ...segments);
  if (!inside(file)) return { status: 403 };
  let info;
  try {
    file = await realpath(file);  // symlinks must stay inside the repository too
    if (!inside(file)) return { status: 403 };
    info = await stat(file);
  } catch {
    return { status: 404 };
  }
  if (info.isDirectory()) {
    if (!urlPath.endsWith('/')) return { status: 301, location: `${urlPath}/` };
    file = join(file, 'index.html');
    try {
      info = await stat(file);
    } catch {
      return { status: 404 };
    }
  }
  if (!info.isFile()) return { status: 404 };
  return { status: 200, file, size: info.size, mtime: info.mtime };
}

const server = createServer(async (req, res) => {
  const started = Date.now();
  const url = new URL(req.url, 'http://localhost');
  const log = (status) => {
    if (process.env.QUIET !== '1') console.log(`${req.method} ${url.pathname} ${status} ${Date.now() - started}ms`);
  };
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    log(405);
    return send(res, 405, 'method not allowed', { Allow: 'GET, HEAD' });
  }
  if (url.pathname === '/') {
    log(302);
    return send(res, 302, 'see /web/demo/', { Location: '/web/demo/' });
  }
  const r = await resolvePath(url.pathname);
  log(r.status);
  if (r.status === 301) return send(res, 301, `see ${r.location}`, { Location: r.location + url.search });
  if (r.status !== 200) {
    const text = { 400: 'bad request', 403: 'forbidden', 404: 'not found' }[r.status];
    return send(res, r.status, text);
  }
  // no-cache, not no-store: the browser keeps each file but asks again on every use, and gets a
  // 304 while the file is unchanged. A rebuild changes a file's size or mtime, so its ETag, so
  // the dev loop never runs a stale file; a reload keeps the HTTP cache, and with it the code
  // caches the engine attaches to cached scripts and WASM modules.
  const etag = `W/"${r.size.toString(16)}-${r.mtime.getTime().toString(16)}"`;
  const headers = {
    'Cache-Control': 'no-cache',
    ETag: etag,
    'Last-Modified': r.mtime.toUTCString(),
    'X-Content-Type-Options': 'nosniff',
    // Cross-origin isolation: the page may use SharedArrayBuffer, so the package picks its
    // pthreads module (ISOLATED=0 serves without, to see the single-threaded path).
    ...(ISOLATED ? { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } : {}),
  };
  if (req.headers['if-none-match']?.split(',').some((tag) => tag.trim() === etag)) {
    res.writeHead(304, headers);
    return res.end();
  }
  res.writeHead(200, {
    'Content-Type': MIME[extname(r.file).toLowerCase()] ?? 'application/octet-stream',
    'Content-Length': r.size,
    ...headers,
  });
  if (req.method === 'HEAD') return res.end();
  createReadStream(r.file)
    .on('error', () => res.destroy())
    .pipe(res);
});

server.on('error', (e) => {
  console.error(`serve: ${e.message}`);
  process.exit(1);
});
server.listen(PORT, HOST, () => {
  const { port } = server.address();
  const host = HOST.includes(':') ? `[${HOST}]` : HOST;
  console.log(`webattention demo: http://${host}:${port}/web/demo/  (serving ${ROOT})`);
  // The static copy npm run build:demo writes, where there is one: the page as a deploy serves it.
  if (existsSync(join(ROOT, 'build/demo/index.html'))) {
    console.log(`static build:   http://${host}:${port}/build/demo/`);
  }
});
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections?.();
    process.exit(0);
  });
}
