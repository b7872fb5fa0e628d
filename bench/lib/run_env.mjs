// What a benchmark run records about where it ran (bench/prefill/run.mjs and bench/decode/decode.mjs print it
// above their tables): the command, date, CPU, load average, Node version and which build of the
// package was timed; the checks that what it needs is there; and the main that runs the Node and
// browser parts and writes --json.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

export const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

export function cpuModel() {
  try {
    const m = readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.*)$/m);
    const cores = readFileSync('/proc/cpuinfo', 'utf8').match(/^processor\s*:/gm)?.length;
    return `${m ? m[1] : '?'} (${cores ?? '?'} logical CPUs)`;
  } catch {
    return '? (no /proc/cpuinfo)';
  }
}

export function loadAverage() {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return '?';
  }
}

function gitState() {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'cpp', 'web/src'], { cwd: ROOT, encoding: 'utf8' }).trim();
    return `${rev}${dirty ? ' + uncommitted changes in cpp/ or web/src/' : ''}`;
  } catch {
    return '?';
  }
}

function wasmBuilt(script) {
  const f = join(ROOT, 'web/dist/webattention_core.wasm');
  if (!existsSync(f)) {
    console.error(`${script}: web/dist/webattention_core.wasm is missing: run \`bash scripts/build.sh\` first`);
    process.exit(1);
  }
  return statSync(f).mtime.toISOString();
}

/** Exits with the install command when one of the peer packages is not in bench/node_modules. */
export function checkPeersInstalled(script, packages) {
  for (const p of packages) {
    if (!existsSync(join(ROOT, 'bench/node_modules', p, 'package.json'))) {
      console.error(`${script}: bench/node_modules/${p} is missing: run \`npm --prefix bench install --no-audit --no-fund\``);
      process.exit(1);
    }
  }
}

/** Prints a script's header comment (its usage; after `error` if given) and exits (2 on error). */
export function exitWithUsage(scriptUrl, error) {
  const lines = readFileSync(fileURLToPath(scriptUrl), 'utf8').split('\n');
  if (lines[0].startsWith('#!')) lines.shift();
  const text = lines.slice(0, lines.findIndex((l) => !l.startsWith('//'))).map((l) => l.slice(3)).join('\n');
  const name = fileURLToPath(scriptUrl).split(/[\\/]/).pop();
  (error ? console.error : console.log)((error ? `${name}: ${error}\n\n` : '') + text);
  process.exit(error ? 2 : 0);
}

/**
 * The flags of the suites that compare engines (prefill/run.mjs, decode/decode.mjs): where they
 * run (--node, --browser, --firefox; Node when none), --quick, --markdown, --json FILE, --wasm NAME.
 */
export const SUITE_FLAGS = Object.freeze(Object.fromEntries([
  ...['node', 'browser', 'firefox', 'quick', 'markdown'].map((name) => [name, { type: 'boolean', default: false }]),
  ...['json', 'wasm'].map((name) => [name, { type: 'string' }]),
]));

/**
 * A bench script's flags, by node:util's parseArgs (strict): `options` as parseArgs takes them (or,
 * for a string flag with a default, that default alone: `reps: '30'`), plus --help / -h, which prints the script's usage (its header comment) and exits. A flag it
 * does not know, or one missing its value, exits with that one-line error above the usage.
 * Returns { values, positionals }.
 */
export function parseFlags(scriptUrl, argv, options, { allowPositionals = false } = {}) {
  let parsed;
  try {
    const full = Object.fromEntries(Object.entries(options).map(([name, o]) =>
      [name, typeof o === 'string' ? { type: 'string', default: o } : o]));
    parsed = parseArgs({ args: argv, options: { ...full, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (e) {
    exitWithUsage(scriptUrl, e.message);
  }
  if (parsed.values.help) exitWithUsage(scriptUrl);
  return parsed;
}

/**
 * The calling script (scriptUrl: its import.meta.url) run again in a fresh Node process as
 * `--child ...args`, with this process's Node flags (e.g. --experimental-wasm-relaxed-simd): the
 * last line it prints, parsed as JSON. The A/Bs of two builds run each in processes of its own
 * (bench/ab/process_decode_ab.mjs, bench/decode/stack_ab.mjs --processes): in one process the
 * build imported first, or timed second, ran faster.
 */
export function runChild(scriptUrl, args) {
  const out = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(scriptUrl), '--child', ...args],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 24 });
  return JSON.parse(out.trim().split('\n').pop());
}

/** The header lines every run starts with (bench/<script> run with argv). */
export function commonHeader(script, argv) {
  return {
    command: `${process.env.WEBATTENTION_WASM ? `WEBATTENTION_WASM=${process.env.WEBATTENTION_WASM} ` : ''}`
      + `node bench/${script} ${argv.join(' ')}`.trim(),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    'load average (1/5/15 min) at the start': loadAverage(),
    cpu: cpuModel(),
    node: process.version,
    webattention: `${JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version} at git ${gitState()}, `
      + `web/dist/webattention_core.wasm built ${wasmBuilt(script)}`,
  };
}

/**
 * A benchmark's main: prints the header, runs runNode(opts, header) and/or runBrowser(opts,
 * header, engine) as opts.node / opts.browser (Chromium) / opts.firefox say, writes their results to opts.json if given, prints the
 * total time and exits (ORT and tfjs may keep worker threads alive).
 */
export async function runAndExit(script, opts, { runNode, runBrowser }) {
  const common = commonHeader(script, process.argv.slice(2));
  console.log(Object.entries(common).map(([k, v]) => `${k}: ${v}`).join('\n'));
  const t0 = Date.now();
  try {
    const results = {};
    if (opts.node) results.node = await runNode(opts, common);
    if (opts.browser) results.browser = await runBrowser(opts, common, 'chromium');
    if (opts.firefox) results.firefox = await runBrowser(opts, common, 'firefox');
    if (opts.json) {
      writeFileSync(opts.json, `${JSON.stringify(results, null, 1)}\n`);
      console.log(`\nwrote ${opts.json}`);
    }
  } catch (e) {
    console.error(`\n${script}: ${e.stack ?? e}`);
    process.exit(1);
  }
  console.log(`\ntotal ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  process.exit(0);
}

/** The built package's Node entry (web/dist/node.js, what a user's import loads): its exports. */
export function importBuiltPackage() {
  return import(pathToFileURL(join(ROOT, 'web/dist/node.js')).href);
}
