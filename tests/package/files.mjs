// The packed-package test's temp folder (removed at the end) and file listings.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { onCleanup } from './processes.mjs';

export function makeTempRoot() {
  const dir = mkdtempSync(join(tmpdir(), 'webattention-package-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every file under dir, as '/'-separated paths relative to it. */
export function listFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath ?? d.path, d.name)).split(sep).join('/'));
}
