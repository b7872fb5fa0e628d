// Child processes and clean-up for the packed-package test: every command runs in its own process
// group, bounded in time, so that a hang fails the run instead of stalling CI; what a part sets
// up (temp folders, servers, the browser) is undone at the end whatever happened.
import { spawn } from 'node:child_process';
import { info } from './reporting.mjs';

export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const cleanups = [];  // run last-in first-out, each at most once
/** Registers fn to run at the end (cleanup()). */
export function onCleanup(fn) {
  cleanups.push(fn);
}
export async function cleanup() {
  while (cleanups.length) {
    const fn = cleanups.pop();
    try {
      await withTimeout(Promise.resolve().then(fn), 15_000, 'cleanup step');
    } catch (e) {
      info(`cleanup: ${e.message}`);
    }
  }
}

const children = new Set();
/** Runs a command (own process group), resolves to { code, stdout, stderr }; kills it on timeout. */
export function exec(cmd, args, { cwd, timeoutMs, env = process.env }) {
  return new Promise((resolvePromise) => {
    const child = spawn(cmd, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child);
    }, timeoutMs);
    child.on('error', (e) => { stderr += String(e); });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolvePromise({ code: timedOut ? 'timeout' : code ?? signal, stdout, stderr, timedOut });
    });
  });
}
function killGroup(child) {
  try { process.kill(-child.pid, 'SIGKILL'); } catch { /* already gone */ }
}
/** Kills every command still running (watchdog, signals). */
export function killChildren() {
  for (const c of children) killGroup(c);
}
export const tail = (s, n = 1500) => (s.length > n ? `...${s.slice(-n)}` : s).trim();
export const describeRun = (r) => `exit ${r.code}${r.timedOut ? ' (killed)' : ''}\n${tail(r.stderr || r.stdout)}`;
