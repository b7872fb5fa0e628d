// The demo's Generate button as the browser tests press it (demo.test.mjs, demo_product.test.mjs),
// and what a run of the model panel shows.
/** Presses Generate for `n` characters with the form as it is; resolves to what the panel shows. */
export async function generate(page, n) {
  await page.fill('#gen-controls input[name=tokens]', String(n));
  const runs = await page.evaluate(() => document.body.dataset.genRuns);
  await page.click('#gen-run');
  await page.waitForFunction((before) => document.body.dataset.genRuns !== before, runs, { timeout: 30_000 });
  return page.evaluate(() => ({
    ...document.body.dataset,
    statusText: document.getElementById('gen-status').textContent,
    shown: document.getElementById('gen-out').textContent,
    heads: Array.from(document.querySelectorAll('#gen-heads canvas'), (c) => ({ ...c.dataset, width: c.width, height: c.height })),
  }));
}
