/**
 * The console page driven in headless Chromium (puppeteer-core on Debian's chromium, test/chromium.ts): the
 * subscribers table, Pause and Resume on a paced subscriber, its runs by stage, Cancel, a key lookup, the dead
 * letters and Replay (twice: the second skips), a hostile name shown as text, and no Content-Security-Policy
 * violation on the way. SLUICE_DOCS_SCREENSHOT_DIR=<dir> also writes console-overview.png and
 * console-runs.png there (docs/ holds them).
 */
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findChromium } from '../chromium.js';
import { consoleApp, HOSTILE, type ConsoleFixture } from './console-fixture.js';

const shots = process.env.SLUICE_DOCS_SCREENSHOT_DIR;

let fx: ConsoleFixture;
let browser: Browser;
let page: Page;
const errors: string[] = [];

beforeAll(async () => {
  const executablePath = findChromium();
  fx = consoleApp({ port: 0, console: { token: 't' } });
  await fx.app.start();
  for (let n = 1; n <= 6; n++) await fx.broker.publish('orders', { n }, { key: `order-${n}` });
  await fx.app.idle(); // orders 2, 4 and 6 are in orders.dlq
  browser = await puppeteer.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu'], // as root, Chromium runs only without its sandbox
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  // Every violation of the page's policy, and every script error, fails the test at its end.
  await page.evaluateOnNewDocument(`window.violations = [];
    document.addEventListener('securitypolicyviolation', (e) => violations.push(e.violatedDirective + ' ' + e.blockedURI));`);
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (/Content Security Policy|Trusted Type/i.test(m.text())) errors.push(m.text());
  });
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await fx?.app.stop();
});

/*
 * What runs in the page is given as text: this project's TypeScript has no DOM types (its tsconfig is Node's),
 * and a `lib="dom"` reference here would give them to every file it compiles.
 */

/** `expression`'s value in the page. */
const read = <T>(expression: string): Promise<T> => page.evaluate(expression) as Promise<T>;

/** The text of each row of table `id`, cells joined by `|`. */
const rows = (id: string): Promise<string[]> =>
  read(
    `[...document.querySelectorAll('#${id} tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent.trim()).join('|'))`,
  );

/** Waits until `expression`, evaluated in the page, is true. */
const until = (expression: string) => page.waitForFunction(expression, { timeout: 15_000 });

/** Waits until element `selector`'s text matches `pattern`. */
const textMatches = (selector: string, pattern: RegExp) =>
  until(`${pattern.toString()}.test(document.querySelector(${JSON.stringify(selector)})?.textContent ?? '')`);

/** Clicks the subscriber named `name` in the table (in the page, at once: a refresh may redraw the table). */
async function select(name: string): Promise<void> {
  const found = `[...document.querySelectorAll('#subscribers button.link')].find((b) => b.textContent === ${JSON.stringify(name)})`;
  await until(found);
  await read(`${found}.click()`);
  await until(`document.getElementById('detail-name').textContent === ${JSON.stringify(name)}`);
}

describe('the console page in a browser', () => {
  it('shows the subscribers, pauses and resumes a paced one, lists and cancels its runs, and looks up a key', async () => {
    await page.goto(`http://127.0.0.1:${fx.app.httpPort()}/console`);
    await page.waitForSelector('#subscribers tbody tr');
    const table = await rows('subscribers');
    expect(table).toHaveLength(3);
    expect(table[0]).toMatch(/^reindex\|rows\|0\|0\|0\|0\|debounce\|no$/);
    expect(table[1]).toMatch(/^orders\|orders\|0\|0\|0\|3\|\|$/);
    expect(table[2]).toBe(`${HOSTILE}|misc|0|0|0|0||`);
    expect(await page.title()).toBe('shop · Sluice console');
    await textMatches('#status', /^ready$/);

    await page.type('#token', 't');
    expect(await page.evaluate("sessionStorage.getItem('sluice-console-token')")).toBe('t');
    await select('reindex');
    await page.click('#pause');
    await textMatches('#message', /^Paused reindex \(4 shards changed\)\.$/);
    await textMatches('#pace-state', /^paused$/);
    await until("document.querySelector('#subscribers tbody tr').textContent.endsWith('debouncepaused')");
    expect((await fx.app.inspect()).subscribers[0]!.pace?.paused).toBe(true);
    expect((await rows('shards')).every((r) => /^\d\|paused\|/.test(r))).toBe(true);

    for (const key of ['row-1', 'row-2', 'row-3']) await fx.app.send('reindex', { key, event: { n: 1 } });
    await fx.app.send('reindex', { key: 'row-2', event: { n: 2 } }); // the same window: two events
    await page.click('#refresh');
    await textMatches('#runs-note', /^3 gathering shown$/);
    expect((await rows('runs')).map((r) => r.split('|').slice(1, 7).join('|')).sort()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^row-2\|\d\|2\|0\|closes 2026-01-01 00:00:00\.010\|debounce$/)]),
    );
    await fx.clock.advance(20); // the windows close; the runs wait for the pause
    await page.click('.tab[data-stage=waiting]');
    await textMatches('#runs-note', /^3 waiting shown$/);
    expect((await rows('runs')).every((r) => r.endsWith('|pause|Cancel'))).toBe(true);
    await page.type('#key', 'row-2');
    await page.click('#key-form button');
    await textMatches('#key-result', /"stage": "waiting"/);
    if (shots) await page.screenshot({ path: path.join(shots, 'console-runs.png'), fullPage: true });

    // Cancel row-3's run: it never runs.
    const cancelled = (await rows('runs')).findIndex((r) => r.split('|')[1] === 'row-3');
    page.once('dialog', (d) => void d.accept());
    await (await page.$$('#runs button.cancel'))[cancelled]!.click();
    await textMatches('#message', /^Cancelled row-3@.* \(its waiting\)\.$/);
    await textMatches('#runs-note', /^2 waiting shown$/);

    expect(fx.ran).toEqual([]);
    await page.click('#resume');
    await textMatches('#message', /^Resumed reindex \(4 shards changed\)\.$/);
    await textMatches('#pace-state', /^not paused$/);
    await fx.app.idle();
    expect(fx.ran.map((r) => `${r.key}:${r.n}`).sort()).toEqual(['row-1:1', 'row-2:2']);
    expect((await fx.app.inspect()).subscribers[0]!.pace?.paused).toBe(false);
    await page.click('#refresh');
    await textMatches('#runs-note', /^No run is waiting\.$/);
  });

  it('lists dead letters and replays them: they run again, and a second replay skips them', async () => {
    await select('orders');
    expect(await read("document.getElementById('pace').hidden")).toBe(true);
    await textMatches('#dead-topic', /^orders\.dlq$/);
    await textMatches('#letters-note', /^3 shown$/);
    const letters = await rows('letters');
    expect(
      letters.map((l) =>
        l
          .split('|')
          .filter((_, i) => [2, 4, 6, 7].includes(i))
          .join('|'),
      ),
    ).toEqual(['order-2|orders 0@1|{"n":2}|no', 'order-4|orders 0@3|{"n":4}|no', 'order-6|orders 0@5|{"n":6}|no']);
    expect(letters[0]).toContain('even: 2');

    fx.rejecting.on = false;
    await page.type('#replay-form input[name=partition]', '0');
    await page.type('#replay-form input[name=fromOffset]', '0');
    await page.type('#replay-form input[name=limit]', '10');
    await page.click('#replay');
    await textMatches('#replay-result', /^Replayed 3, skipped 0 \(replayed before\), read 3\.$/);
    await fx.app.idle();
    expect(fx.handled).toEqual([1, 3, 5, 2, 4, 6]);
    await until(
      "[...document.querySelectorAll('#letters tbody tr td:last-child')].map((td) => td.textContent).join() === 'yes,yes,yes'",
    );
    await page.click('#replay');
    await textMatches('#replay-result', /^Replayed 0, skipped 3 \(replayed before\), read 3\.$/);
    await fx.app.idle();
    expect(fx.handled).toEqual([1, 3, 5, 2, 4, 6]);
    if (shots) await page.screenshot({ path: path.join(shots, 'console-overview.png'), fullPage: true });
  });

  it('shows a hostile name as text, and met no policy violation nor script error', async () => {
    await select(HOSTILE);
    expect(await page.$$('img')).toHaveLength(0);
    expect(await page.title()).toBe('shop · Sluice console');
    expect(await read("document.getElementById('detail-name').textContent")).toBe(HOSTILE);
    expect(await page.evaluate('window.violations')).toEqual([]);
    expect(errors).toEqual([]);
    // The policy is in force: a string put into an HTML sink is refused (Trusted Types, with no policy).
    const refused = await page.evaluate(
      "(() => { try { document.body.insertAdjacentHTML('beforeend', '<b>x</b>'); return 'taken'; } catch (e) { return String(e); } })()",
    );
    expect(refused).toMatch(/TrustedHTML/);
  });
});
