// The browser engines the page tests run in, from one place: the demo tests (tests/browser/) and
// the packed-package test's pages (tests/package/browser_page.mjs) run every page in each of
// ENGINES, so a regression in either engine fails them.
//   chromium: Debian's /usr/bin/chromium (env CHROMIUM), driven by playwright-core;
//   firefox:  Debian's firefox-esr (env FIREFOX), driven headless over WebDriver BiDi by
//             puppeteer-core (playwright-core drives only its own patched Firefox builds).
// BROWSERS=chromium (or firefox) runs one engine alone, for a quick local run.
// A Firefox page is wrapped so that it answers the part of playwright-core's Page API the tests
// use (goto, waitForFunction, evaluate, fill, click, selectOption, textContent, …): each test is
// written once for both engines.
import { existsSync } from 'node:fs';
import { CHROMIUM, CHROMIUM_ARGS } from './harness.mjs';

export const FIREFOX = process.env.FIREFOX ?? '/usr/bin/firefox-esr';
const BINARIES = { chromium: CHROMIUM, firefox: FIREFOX };
export const ENGINES = (process.env.BROWSERS ?? 'chromium,firefox').split(',').map((e) => e.trim()).filter(Boolean);
for (const engine of ENGINES) {
  if (!BINARIES[engine]) throw new Error(`BROWSERS: unknown engine '${engine}' (expected chromium, firefox)`);
}

/** Whether the engine's binary is installed (a test asserts it, naming the fix). */
export const installed = (engine) => existsSync(BINARIES[engine]);
export const binaryOf = (engine) => BINARIES[engine];

/**
 * Starts `engine` headless; resolves to { engine, version, newPage(viewport?), close() }. Every
 * page gets a fresh browser context (no cache or storage shared between pages). chromiumArgs:
 * extra Chromium flags; firefoxPrefs: Firefox preferences ({ name: value }, e.g. the
 * javascript.options.wasm_* ones a benchmark compares). The tests and bench/ launch browsers
 * only here.
 */
export async function launchBrowser(engine, { chromiumArgs = [], firefoxPrefs = {}, timeout = 30_000 } = {}) {
  if (engine === 'chromium') {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: [...CHROMIUM_ARGS, ...chromiumArgs], timeout });
    return {
      engine,
      version: browser.version(),
      newPage: (viewport) => browser.newPage(viewport ? { viewport } : {}),
      close: () => browser.close().catch(() => {}),
    };
  }
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    browser: 'firefox', protocol: 'webDriverBiDi', executablePath: FIREFOX, headless: true, timeout, extraPrefsFirefox: firefoxPrefs,
  });
  return {
    engine,
    version: await browser.version(),
    newPage: async (viewport) => {
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      if (viewport) await page.setViewport(viewport);
      return new FirefoxPage(page, context);
    },
    close: () => browser.close().catch(() => {}),
  };
}

/** A puppeteer-core page behind the playwright-core Page methods the tests call. */
class FirefoxPage {
  #page;
  #context;

  constructor(page, context) {
    this.#page = page;
    this.#context = context;
  }

  // Events keep their names and their objects the methods the tests read (console: type(),
  // text(); response: status(), url(), headers(); requestfailed: url(), failure()); a console
  // message's type is playwright's name ('warning', where puppeteer says 'warn').
  on(event, handler) {
    if (event === 'console') {
      this.#page.on(event, (m) => handler({ type: () => (m.type() === 'warn' ? 'warning' : m.type()), text: () => m.text() }));
    } else {
      this.#page.on(event, handler);
    }
    return this;
  }

  url() { return this.#page.url(); }
  goto(url, { timeout, waitUntil = 'load' } = {}) { return this.#page.goto(url, { timeout, waitUntil }); }
  reload({ timeout, waitUntil = 'load' } = {}) { return this.#page.reload({ timeout, waitUntil }); }
  /** As playwright's: `fn` runs in every document the page loads, before its own scripts. */
  addInitScript(fn) { return this.#page.evaluateOnNewDocument(fn); }
  evaluate(fn, arg) { return this.#page.evaluate(fn, arg); }
  /**
   * Polls fn(arg) in the page every 100 ms until it is truthy or `timeout` ms pass. Not
   * puppeteer's waitForFunction: over WebDriver BiDi it gave up ("Waiting failed") on a busy
   * Firefox page that a later poll would have found done (bench/lib/browser_page.mjs polls alike).
   */
  async waitForFunction(fn, arg, { timeout = 30_000 } = {}) {
    const end = Date.now() + timeout;
    for (;;) {
      const value = await this.#page.evaluate(fn, arg).catch(() => false);  // mid-navigation: not yet
      if (value) return value;
      if (Date.now() > end) throw new Error(`waitForFunction: not true within ${timeout} ms: ${fn}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  screenshot({ path, fullPage = false } = {}) { return this.#page.screenshot({ path, fullPage }); }
  setViewportSize(viewport) { return this.#page.setViewport(viewport); }
  textContent(selector) { return this.#page.$eval(selector, (el) => el.textContent); }
  isDisabled(selector) { return this.#page.$eval(selector, (el) => el.disabled); }
  $$eval(selector, fn, arg) { return this.#page.$$eval(selector, fn, arg); }
  selectOption(selector, value) { return this.#page.select(selector, value); }
  hover(selector) { return this.#page.hover(selector); }
  bringToFront() { return this.#page.bringToFront(); }

  click(selector, { position } = {}) {
    return this.#page.click(selector, position ? { offset: position } : {});
  }

  /** As playwright's fill(): the value set, then input and change events. */
  fill(selector, value) {
    return this.#page.$eval(selector, (el, v) => {
      el.value = v;
      el.dispatchEvent(new Event('input', { bubbles: true }));
      el.dispatchEvent(new Event('change', { bubbles: true }));
    }, String(value));
  }

  async uncheck(selector) {
    if (await this.#page.$eval(selector, (el) => el.checked)) await this.click(selector);
  }

  async check(selector) {
    if (!(await this.#page.$eval(selector, (el) => el.checked))) await this.click(selector);
  }

  locator(selector) {
    return { fill: (value) => this.fill(selector, value) };
  }

  async close() {
    await this.#page.close().catch(() => {});
    await this.#context.close().catch(() => {});
  }
}
