/**
 * The AsyncAPI document as a page (asyncApiHtml, what `sluice docs serve` serves), opened in headless
 * Chromium: what a person sees names the app, its operations and channels, and shows hostile names as text.
 * SLUICE_DOCS_SCREENSHOT=<file.png> also writes a picture of it (docs/asyncapi-page.png comes from here).
 */
import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { asyncApiHtml } from '../../src/app/asyncapi-html.js';
import { App, MemoryBroker, subscriber, topic } from '../../src/index.js';
import { silentLogger } from '../../src/testing.js';
import { findChromium, openPage } from '../chromium.js';

const orders = topic('orders', { schema: z.object({ id: z.string(), cents: z.number().int() }), key: (o) => o.id });
const invoices = topic('invoices', { schema: z.object({ orderId: z.string(), total: z.string() }) });
const hostile = '<img src=x onerror="document.title=1">';

const app = new App({
  name: 'billing',
  version: '2.1.0',
  description: 'Bills orders.',
  logger: silentLogger,
}).withBroker(new MemoryBroker(), (b) =>
  b.include(
    subscriber(orders, (o) => ({ orderId: o.id, total: String(o.cents) }))
      .publishTo(invoices)
      .workersByKey(4)
      .retry({ attempts: 3 })
      .build(),
    subscriber('reminders', () => {})
      .pace({ debounce: '5s', perMinute: 60 })
      .build(),
    subscriber(hostile, () => {})
      .name('hostile')
      .build(),
  ),
);

let server: Server;
let url: string;
let chromium: string;

beforeAll(async () => {
  chromium = findChromium();
  const page = asyncApiHtml(app.asyncapi());
  server = createServer((_, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}, 600_000);

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('the AsyncAPI page in a browser', () => {
  it('shows the app, its operations with their settings, and its channels with their payloads', async () => {
    const screenshot = process.env.SLUICE_DOCS_SCREENSHOT;
    const dom = await openPage(chromium, url, screenshot ? { screenshot, height: 1500 } : {});
    const text = dom.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    expect(dom).toContain('<title>billing · AsyncAPI</title>');
    expect(text).toContain('billing 2.1.0');
    expect(text).toContain('Bills orders.');
    expect(text).toContain('receive orders.receive on orders');
    expect(text).toContain('send orders.publish.invoices on invoices');
    expect(text).toContain('4 lanes');
    expect(text).toContain('3 attempts');
    expect(text).toContain('reminders.dlq');
    expect(text).toMatch(/"kind":"debounce","windowMs":5000/);
    expect(text).toContain('"cents"'); // the payload schema of orders
    // A hostile topic name is text on the page, not an element: no image, and the title is untouched.
    expect(dom).not.toMatch(/<img/i);
    expect(dom).toContain('&lt;img src=x onerror=');
  });
});
