#!/usr/bin/env node
// Minifies an Emscripten glue file (web/dist/<stem>.mjs) in place with esbuild: run by CMake after
// every link of the package's WASM modules (CMakeLists.txt). Emscripten 3.1.6 without Closure
// leaves the glue's identifiers whole (Embind's runtime alone is ~35 KB of it), and a cold start
// pays for every byte: V8 compiles an ES module's text at about 30 µs per KB on the machines we
// measure (docs/performance/memory_and_startup.md#cold-start). Renaming local identifiers is safe here: the glue has
// no eval or new Function (-sDYNAMIC_EXECUTION=0), reaches the WASM imports and exports and
// Embind's type records by quoted property names, which esbuild keeps, and its exports keep their
// names. Running it twice gives the same file.
//   node scripts/minify_glue.mjs FILE...
import { readFileSync, writeFileSync } from 'node:fs';
import { transformSync } from 'esbuild';

for (const file of process.argv.slice(2)) {
  const source = readFileSync(file, 'utf8');
  const { code } = transformSync(source, { minify: true, format: 'esm', target: 'es2020', legalComments: 'none' });
  writeFileSync(file, code);
}
