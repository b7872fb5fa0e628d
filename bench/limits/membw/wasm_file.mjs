// Node side of the bandwidth kernel: build/membw/membw.wasm's bytes, built (bash
// bench/limits/membw/build.sh, emcc) on first use. Pages fetch the same file once it is built.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../../lib/run_env.mjs';

const MEMBW_WASM = 'build/membw/membw.wasm';

/** membw.wasm's bytes, building it first when it is missing. */
export function membwWasm() {
  if (!existsSync(join(ROOT, MEMBW_WASM))) {
    console.log(`(building ${MEMBW_WASM})`);
    execFileSync('bash', [join(ROOT, 'bench/limits/membw/build.sh')], { stdio: 'inherit' });
  }
  return readFileSync(join(ROOT, MEMBW_WASM));
}
