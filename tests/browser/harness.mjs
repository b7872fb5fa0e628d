// What the browser tests share: the repo's static server (scripts/serve.mjs, cross-origin
// isolated unless isolated: false) and headless Chromium on a fresh profile. bench/run.mjs
// --browser uses both; tests/package/run.mjs takes the Chromium binary and flags.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu-sandbox', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-quic'];

/** Starts scripts/serve.mjs on a free port; resolves to { child, url }. */
export function startServer({ isolated = true } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'scripts/serve.mjs'), '0'], {
      cwd: ROOT,
      env: { ...process.env, QUIET: '1', HOST: '127.0.0.1', ISOLATED: isolated ? '1' : '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/127\.0\.0\.1:(\d+)\//);
      if (m) resolve({ child, url: `http://127.0.0.1:${m[1]}` });
    });
    child.stderr.on('data', (chunk) => { out += chunk; });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`serve.mjs exited (${code}) before listening:\n${out}`)));
    setTimeout(() => reject(new Error(`serve.mjs did not report its URL within 10 s:\n${out}`)), 10_000).unref();
  });
}

/**
 * Headless Chromium on a fresh user-data dir; close() also removes the profile. `timeout` (ms)
 * bounds the launch (bench/run.mjs keeps the 60 s it has always allowed).
 */
export async function launchChromium(extraArgs = [], { timeout = 30_000 } = {}) {
  const userDataDir = mkdtempSync(join(tmpdir(), 'webattention-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs], timeout,
  });
  return {
    context,
    close: async () => {
      await context.close().catch(() => {});
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
