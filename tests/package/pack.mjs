// Part 1 of the packed-package test: a clean copy of the repository, `npm pack` there (its prepack
// step builds the WASM modules from scratch), and what the tarball must hold.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { listFiles } from './files.mjs';
import { describeRun, exec } from './processes.mjs';
import { check, info, require_, step } from './reporting.mjs';
import { BUILD_TIMEOUT_MS, REPO } from './settings.mjs';

const REQUIRED_FILES = ['package.json', 'LICENSE', 'README.md', 'web/index.d.ts', 'web/modules.json'];

/**
 * What a clean clone of the repository holds: the files git tracks (as they are in the working
 * tree, so uncommitted edits are tested too) and the new ones it would add, never ignored ones.
 */
function cleanCopy(dest) {
  const listed = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' });
  const files = [...new Set(listed.split('\0').filter(Boolean))].filter((f) => existsSync(join(REPO, f)) && statSync(join(REPO, f)).isFile());
  for (const f of files) {
    mkdirSync(dirname(join(dest, f)), { recursive: true });
    copyFileSync(join(REPO, f), join(dest, f));
  }
  return files.length;
}

/** The relative targets of a Markdown text's links and images, without their #fragments. */
function relativeLinks(markdown) {
  return [...markdown.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1].split('#')[0])
    .filter((target) => target && !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

export async function packPart(root) {
  step('1/6 clean copy of the repository, npm pack (prepack builds the WASM modules)');
  const clone = join(root, 'clone');
  info(`${cleanCopy(clone)} files copied (what git tracks or would add)`);
  require_('the clean copy has no web/dist (a build output)', !existsSync(join(clone, 'web/dist')));
  // The build's dev dependencies (esbuild bundles the Node entry), as `npm ci` leaves them in a
  // fresh clone: the repository's own.
  symlinkSync(join(REPO, 'node_modules'), join(clone, 'node_modules'), 'dir');
  const packDir = join(root, 'pack');
  mkdirSync(packDir);
  // The repository's compiler cache (CMakeLists.txt: ccache): the copy's compiles are the ones
  // its own WASM builds made, so only the links run again.
  const env = { ...process.env, CCACHE_DIR: join(REPO, 'build/ccache') };
  const r = await exec('npm', ['pack', '--json', '--pack-destination', packDir, '--loglevel=error'], { cwd: clone, timeoutMs: BUILD_TIMEOUT_MS, env });
  require_('npm pack (with its prepack build) succeeded', r.code === 0, r.code === 0 ? '' : describeRun(r));
  // The prepack build's log comes first on stdout; npm's JSON is the last thing, from a "[" line.
  const json = JSON.parse(r.stdout.slice(r.stdout.search(/^\[$(?![\s\S]*^\[$)/m)));
  const meta = json[0];
  const tarball = join(packDir, meta.filename);
  require_('tarball written', existsSync(tarball), tarball);
  const files = meta.files.map((f) => f.path);
  info(`tarball ${meta.filename}: ${(statSync(tarball).size / 1024).toFixed(1)} KiB packed, `
    + `${(meta.unpackedSize / 1024).toFixed(1)} KiB unpacked, ${files.length} files`);

  for (const f of REQUIRED_FILES) check(`tarball lists ${f}`, files.includes(f));
  const srcJs = listFiles(join(clone, 'web/src')).filter((f) => f.endsWith('.js')).map((f) => `web/src/${f}`);
  const missingSrc = srcJs.filter((f) => !files.includes(f));
  check(`tarball lists all ${srcJs.length} web/src/**/*.js`, srcJs.length > 0 && missingSrc.length === 0,
    missingSrc.length ? `missing ${missingSrc.join(', ')}` : srcJs.map((f) => f.slice(8)).join(' '));
  // web/dist as the prepack build left it, whole: every module of web/modules.json and its loaders.
  const built = listFiles(join(clone, 'web/dist')).map((f) => `web/dist/${f}`);
  const missingDist = built.filter((f) => !files.includes(f));
  check(`tarball holds all ${built.length} files the build wrote into web/dist`, built.length > 0 && missingDist.length === 0,
    missingDist.length ? `missing ${missingDist.join(', ')}` : built.map((f) => f.slice(9)).join(' '));
  const { modules } = JSON.parse(readFileSync(join(clone, 'web/modules.json'), 'utf8'));
  const wasms = modules.map((m) => `web/dist/${m.stem}.wasm`);
  const unbuilt = wasms.filter((f) => !(meta.files.find((p) => p.path === f)?.size > 0));
  check(`tarball holds the .wasm of all ${modules.length} modules of web/modules.json, each as built`, unbuilt.length === 0
    && wasms.every((f) => meta.files.find((p) => p.path === f).size === statSync(join(clone, f)).size), unbuilt.join(', '));

  // Every file the package.json points at must ship.
  const pkg = JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8'));
  const targets = new Set();
  const walk = (v) => {
    if (typeof v === 'string') targets.add(v.replace(/^\.\//, ''));
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(pkg.exports);
  if (pkg.types) targets.add(pkg.types.replace(/^\.\//, ''));
  if (pkg.main) targets.add(pkg.main.replace(/^\.\//, ''));
  const dangling = [...targets].filter((t) => !files.includes(t));
  check('every exports/types target is in the tarball', dangling.length === 0,
    dangling.length ? `missing ${dangling.join(', ')}` : [...targets].join(' '));
  const stray = files.filter((f) => !(f === 'package.json' || /^(README|LICENSE|CHANGELOG)/i.test(f) || f.startsWith('web/') || /^docs\/.*\.(md|png)$/.test(f)));
  check('tarball has nothing outside web/ (plus package.json, README, LICENSE and docs/ pages)', stray.length === 0, stray.join(', '));
  // The README's links and pictures, and those of the pages it links to, open inside the package.
  const brokenLinks = files.filter((f) => f.endsWith('.md')).flatMap((md) => relativeLinks(readFileSync(join(clone, md), 'utf8'))
    .map((target) => posix.normalize(posix.join(posix.dirname(md), target)))
    .filter((target) => !files.includes(target)).map((target) => `${md} → ${target}`));
  check('every relative link and image of the packed Markdown files is in the tarball', brokenLinks.length === 0, brokenLinks.join(', '));
  return tarball;
}
