// The packed-package test's output and tally: step titles, info lines, one line per check, and
// the closing "N passed, N failed" line (scripts/test.sh and CI read it).

const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
let passed = 0;
let failed = 0;

export function step(title) {
  console.log(`\n[${secs()} s] ${title}`);
}
export function info(line) {
  console.log(`  ..   ${line}`);
}
export function check(label, ok, detail = '') {
  if (ok) passed += 1;
  else failed += 1;
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${label}${detail ? ` -- ${detail}` : ''}`);
  return ok;
}
/** Thrown to abandon the current part after a failed check it depends on. */
export class Abort extends Error {}
export function require_(label, ok, detail) {
  if (!check(label, ok, detail)) throw new Abort(label);
}

export function finish() {
  console.log(`\n[${secs()} s]\n${passed} passed, ${failed} failed`);  // the last line is the plain "N passed, N failed"
  process.exit(failed || !passed ? 1 : 0);
}
