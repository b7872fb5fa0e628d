// web/src's layers (docs/contributing.md, "The source tree"): each folder is a layer, and a file
// imports only from its own layer or the layers below it. LAYERS is the order, top first, and
// the one place it is written; '.' is web/src itself (the platform entries). Read from the
// source: every `import … from`, `export … from`, bare `import '…'` and `import('…')` of a
// relative path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const LAYERS = ['.', 'api', 'checks', 'dispatch', 'pool', 'wasm', 'webgpu', 'storage', 'base'];

const SRC = fileURLToPath(new URL('../../web/src/', import.meta.url));

// Comments out first (a doc comment may quote an import); whole-line // comments only, so that a
// URL's // inside a string stays.
const code = (text) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
const SPECIFIERS = [
  /^\s*(?:import|export)\b[^;]*?\bfrom\s*(['"])(.+?)\1/gms,
  /^\s*import\s*(['"])(.+?)\1/gm,
  /\bimport\(\s*(['"])(.+?)\1\s*\)/g,
];

/** The relative specifiers `text` imports. */
export function importsOf(text) {
  const body = code(text);
  return SPECIFIERS.flatMap((re) => [...body.matchAll(re)].map((m) => m[2])).filter((s) => s.startsWith('.'));
}

/** A path under web/src (with '/') → its layer: its first folder, or '.' for web/src itself. */
export const layerOf = (path) => (path.includes('/') ? path.split('/')[0] : '.');

/**
 * The imports that break the layering in `graph` (Map: path under web/src → the specifiers it
 * imports): "from -> to (fromLayer above/below toLayer)" for each import of a higher layer, and
 * for a file in a folder no layer names. Specifiers that leave web/src (../dist) are not layers.
 */
export function layerViolations(graph, layers = LAYERS) {
  const rank = new Map(layers.map((name, i) => [name, i]));
  const found = [];
  for (const [from, specifiers] of graph) {
    if (!rank.has(layerOf(from))) found.push(`${from}: in no layer (LAYERS: ${layers.join(', ')})`);
    for (const specifier of specifiers) {
      const to = relative(SRC, resolve(SRC, dirname(from), specifier)).split(sep).join('/');
      if (to.startsWith('..')) continue;
      const [a, b] = [rank.get(layerOf(from)), rank.get(layerOf(to))];
      if (b !== undefined && a !== undefined && b < a) found.push(`${from} -> ${to} (${layerOf(from)} imports ${layerOf(to)}, a layer above it)`);
    }
  }
  return found;
}

function sourceGraph(dir = SRC, graph = new Map()) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sourceGraph(path, graph);
    else if (entry.name.endsWith('.js')) graph.set(relative(SRC, path).split(sep).join('/'), importsOf(readFileSync(path, 'utf8')));
  }
  return graph;
}

test('web/src: every file imports only from its own layer or the layers below', () => {
  const graph = sourceGraph();
  assert.ok(graph.size > 40, `read ${graph.size} files`);
  assert.ok([...graph.values()].flat().length > 100, 'imports found');
  assert.deepEqual(layerViolations(graph), []);
});

test('every layer of LAYERS is a folder of web/src (a renamed folder changes LAYERS too)', () => {
  const folders = readdirSync(SRC, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  assert.deepEqual([...folders].sort(), LAYERS.slice(1).sort());
});

test('the check finds an upward import, of each form, and a file outside the layers', () => {
  const text = [
    "import { a } from '../api/api.js';",
    "export { b } from '../checks/plans.js';",
    "import '../dispatch/dispatch.js';",
    "const c = await import('../pool/pool.js');",
    "// import { d } from '../api/configure.js';",
    "/* import('../api/runtime.js') */",
    "import { e } from './errors.js';",
    "import { f } from '../../dist/modules.js';",
  ].join('\n');
  assert.deepEqual(importsOf(text).sort(), ['../../dist/modules.js', '../api/api.js', '../checks/plans.js',
    '../dispatch/dispatch.js', '../pool/pool.js', './errors.js']);
  const graph = new Map([['base/x.js', importsOf(text)], ['api/y.js', ['../base/x.js', '../node.js']], ['misc/z.js', []]]);
  assert.deepEqual(layerViolations(graph), [
    'base/x.js -> api/api.js (base imports api, a layer above it)',
    'base/x.js -> checks/plans.js (base imports checks, a layer above it)',
    'base/x.js -> dispatch/dispatch.js (base imports dispatch, a layer above it)',
    'base/x.js -> pool/pool.js (base imports pool, a layer above it)',
    'api/y.js -> node.js (api imports ., a layer above it)',
    'misc/z.js: in no layer (LAYERS: ., api, checks, dispatch, pool, wasm, webgpu, storage, base)',
  ]);
});
