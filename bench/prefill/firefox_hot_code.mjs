#!/usr/bin/env node
// What SpiderMonkey made of the package's hottest loop: runs one module's MHA forward in a loop in
// headless Firefox (bench/browser/ab.html), samples the busiest content process with `perf
// record`, and disassembles the most-sampled stretches of JIT code with `gdb` (Firefox release
// builds print no JIT code themselves). Per stretch: its share of the samples, its FMAs and
// multiplies, and its moves to and from the stack frame (`(%rbp)`): an accumulator kept on the
// stack in an inner loop turns its chain into store → load → FMA → store.
//
//   node bench/prefill/firefox_hot_code.mjs [--wasm relaxed] [--shape 512,512,8] [--seconds 30]
//        [--regions 3] [--firefox-pref NAME=VALUE ...]      (needs perf and gdb; run as root)
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { launchBrowser } from '../../tests/browser/browsers.mjs';
import { startServer } from '../../tests/browser/harness.mjs';
import { exitWithUsage, parseFlags } from '../lib/run_env.mjs';

const { values: v } = parseFlags(import.meta.url, process.argv.slice(2), {
  wasm: 'relaxed',
  shape: '512,512,8',
  seconds: '30',
  regions: '3',
  'firefox-pref': { type: 'string', multiple: true, default: [] },
});
const shape = v.shape.split(',').map(Number);
if (shape.length !== 3 || !shape.every((n) => Number.isInteger(n) && n > 0)) exitWithUsage(import.meta.url, '--shape: L,E,h');
const firefoxPrefs = Object.fromEntries(v['firefox-pref'].map((p) => {
  const m = p.match(/^([\w.-]+)=(.*)$/);
  if (!m) exitWithUsage(import.meta.url, `--firefox-pref: expected NAME=VALUE, got '${p}'`);
  return [m[1], m[2] === 'true' ? true : m[2] === 'false' ? false : m[2]];
}));
const run = (cmd, args) => execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });

/** Our Firefox's content process using the most CPU (the one running the page's forwards). */
function busiestContentProcess() {
  const rows = run('ps', ['-eo', 'pid,ppid,pcpu,args', '--sort=-pcpu']).split('\n').slice(1)
    .map((r) => r.trim().split(/\s+/)).map(([pid, ppid, cpu, ...args]) => ({ pid: Number(pid), ppid: Number(ppid), args: args.join(' ') }));
  // puppeteer starts Firefox as our child; its content processes descend from it (through its
  // fork server). Rows come busiest first.
  const ours = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const r of rows) if (ours.has(r.ppid) && !ours.has(r.pid)) ours.add(r.pid), grew = true;
  }
  const content = rows.find((r) => ours.has(r.pid) && r.args.includes('-isForBrowser'));
  if (!content) throw new Error('no content process of our Firefox found');
  return content.pid;
}

const server = await startServer();
const browser = await launchBrowser('firefox', { firefoxPrefs });
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/bench/browser/ab.html?wasm=${v.wasm}&threads=1`);
  while (!(await page.evaluate(() => window.__ab !== undefined))) await sleep(200);
  const error = await page.evaluate(() => window.__ab.error);
  if (error) throw new Error(error);
  const until = Date.now() + Number(v.seconds) * 1000;
  const loop = (async () => {
    while (Date.now() < until) await page.evaluate((s) => window.__ab.time(s, false, 3), shape);
  })();
  await sleep(Math.min(10_000, Number(v.seconds) * 400));  // warm: Firefox swaps in Ion code
  const pid = busiestContentProcess();
  const data = `/tmp/firefox_hot_code_${pid}.data`;
  // Asynchronously: this process must keep sending the page its forwards meanwhile.
  await promisify(execFile)('perf', ['record', '-F', '1000', '-p', String(pid), '-o', data, '--', 'sleep', '5']);
  // Samples per 256-byte stretch of code, each disassembled from its lowest sampled address (an
  // instruction boundary).
  const ips = run('perf', ['script', '-i', data, '-F', 'ip']).split('\n').map((l) => l.trim()).filter(Boolean);
  const regions = new Map();
  for (const ip of ips) {
    const r = regions.get(ip.slice(0, -2)) ?? { n: 0, first: BigInt(`0x${ip}`) };
    r.n += 1;
    if (BigInt(`0x${ip}`) < r.first) r.first = BigInt(`0x${ip}`);
    regions.set(ip.slice(0, -2), r);
  }
  const top = [...regions.values()].sort((a, b) => b.n - a.n).slice(0, Number(v.regions));
  console.log(`Firefox, module '${v.wasm}', shape (${shape.join(', ')}), prefs ${JSON.stringify(firefoxPrefs)}; ${ips.length} samples of pid ${pid}`);
  for (const { n, first } of top) {
    const code = run('gdb', ['-p', String(pid), '-batch', '-ex', `x/90i 0x${first.toString(16)}`])
      .split('\n').filter((l) => /^\s*(=>\s*)?0x/.test(l)).map((l) => l.replace(/^\s*(=>\s*)?/, ''));
    const count = (re) => code.filter((l) => re.test(l)).length;
    console.log(`\n0x${first.toString(16)}: ${(100 * n / ips.length).toFixed(1)}% of the samples; `
      + `${count(/vfmadd/)} FMA, ${count(/v?mulps/)} mulps, ${count(/\(%rbp\)/)} moves to or from the stack frame`);
    console.log(code.map((l) => `  ${l}`).join('\n'));
  }
  await loop;
} finally {
  await browser.close();
  server.child.kill();
}
