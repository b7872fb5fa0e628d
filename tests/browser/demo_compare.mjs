// The demo's "Compare backends" button as the browser tests press it (demo_panels.test.mjs on the
// repository's server, demo_static.test.mjs on the static copy).
import assert from 'node:assert/strict';

/** Presses "Compare backends" at shape "L,E,h" once the machine facts are in; resolves to the
 *  rows of data-compare ([{ backend, available, ms, gflops, maxDiff, note }]). */
export async function compareBackends(page, shape) {
  await page.waitForFunction(() => document.body.dataset.machineGpu !== undefined, null, { timeout: 20_000 });
  await page.selectOption('#compare-size', shape);
  const runs = await page.evaluate(() => document.body.dataset.compareRuns);
  await page.click('#compare-run');
  await page.waitForFunction((before) => document.body.dataset.compareRuns !== before, runs, { timeout: 60_000 });
  const status = await page.evaluate(() => document.body.dataset.compareStatus);
  assert.equal(status, 'done', await page.textContent('#compare-status'));
  return JSON.parse(await page.evaluate(() => document.body.dataset.compare));
}

/** A page's problems less the 404s of the onnxruntime-web probe where bench/node_modules is not
 *  served (the page then says "not loaded"): its "HTTP 404: .../bench/..." responses and the
 *  console's "Failed to load resource: ... 404" lines, which name no URL (any other 404 still
 *  shows as its own "HTTP 404: url" entry). */
export const withoutOrtProbe = (problems, ortServed) =>
  problems.filter((p) => ortServed || !/\/bench\/|404 \(Not Found\)/.test(p));
