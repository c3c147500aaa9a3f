/**
 * `sluice console …` against a running app's console: every view and action from a terminal, its answers
 * printed as JSON, refusals told with the console's code; and the built command, as a user runs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { consoleCommand } from '../../src/cli/console.js';
import { consoleApp, type ConsoleFixture } from '../app/console-fixture.js';
import { Sluice } from './child.js';

const TOKEN = 'cli-token';
let fixture: ConsoleFixture | undefined;

afterEach(async () => {
  await fixture?.app.stop();
  fixture = undefined;
});

async function started(): Promise<{ f: ConsoleFixture; url: string }> {
  const f = (fixture = consoleApp({ port: 0, console: { token: TOKEN } }));
  await f.app.start();
  return { f, url: `http://127.0.0.1:${f.app.httpPort()}` };
}

/** Runs `sluice console <args>` in-process; resolves with what it printed, parsed. */
async function ask(url: string, args: string[], flags: Record<string, string> = {}): Promise<unknown> {
  let printed = '';
  await consoleCommand(args, { url, ...flags }, (text) => (printed += text));
  return JSON.parse(printed) as unknown;
}

describe('sluice console', () => {
  it('shows, pauses, cancels, resumes and replays, as the page does', async () => {
    const { f, url } = await started();
    const token = { token: TOKEN };
    expect(await ask(url, ['pause', 'reindex'], token)).toEqual({ shards: [0, 1, 2, 3] });
    const inspected = (await ask(url, ['inspect'])) as { subscribers: { name: string; pace?: { paused: boolean } }[] };
    expect(inspected.subscribers.find((s) => s.name === 'reindex')?.pace?.paused).toBe(true);
    await f.app.send('reindex', { key: 'a', event: { n: 1 } });
    const b = (await f.app.send('reindex', { key: 'b', event: { n: 2 } })) as { runId: string };
    await f.clock.advance(10);
    await f.app.idle();
    const waiting = (await ask(url, ['runs', 'reindex'], { stage: 'waiting', limit: '10' })) as {
      runs: { key: string; waitingFor: string }[];
    };
    expect(waiting.runs.map((r) => [r.key, r.waitingFor]).sort()).toEqual([
      ['a', 'pause'],
      ['b', 'pause'],
    ]);
    expect(await ask(url, ['key', 'reindex', 'b'])).toMatchObject({ key: { key: 'b', runs: [{ stage: 'waiting' }] } });
    expect(await ask(url, ['cancel', 'reindex', b.runId], token)).toEqual({ cancelled: 'waiting' });
    expect(await ask(url, ['resume', 'reindex'], token)).toEqual({ shards: [0, 1, 2, 3] });
    await f.app.idle();
    expect(f.ran.map((r) => r.key)).toEqual(['a']);

    for (let n = 0; n < 4; n++) await f.broker.publish('orders', { n });
    await f.app.idle();
    const letters = (await ask(url, ['dead-letters', 'orders'])) as { letters: { replayed: boolean }[] };
    expect(letters.letters).toHaveLength(2);
    f.rejecting.on = false;
    expect(await ask(url, ['replay', 'orders'], token)).toEqual({
      replayed: 2,
      skipped: 0,
      unreplayable: 0,
      scanned: 2,
    });
    expect(await ask(url, ['replay', 'orders'], token)).toMatchObject({ replayed: 0, skipped: 2 });
    await f.app.idle();
    expect([...f.handled].sort()).toEqual([0, 1, 2, 3]);
  });

  it("tells a refusal with the console's code, and a usage error before asking anything", async () => {
    const { url } = await started();
    await expect(ask(url, ['pause', 'reindex'])).rejects.toMatchObject({
      code: 1,
      message: expect.stringMatching(/401/),
    });
    await expect(ask(url, ['pause', 'nobody'], { token: TOKEN })).rejects.toMatchObject({
      message: expect.stringMatching(/UNKNOWN_SUBSCRIBER/),
    });
    await expect(ask(url, ['frobnicate'])).rejects.toMatchObject({ code: 2 });
    await expect(ask(url, ['key', 'reindex'])).rejects.toMatchObject({ code: 2 });
    await expect(ask(url, ['inspect'], { stage: 'waiting' })).rejects.toMatchObject({ code: 2 });
    await expect(ask('http://127.0.0.1:1', ['inspect'])).rejects.toMatchObject({
      code: 1,
      message: expect.stringMatching(/did not answer/),
    });
  });

  it('runs as the built command, the token from the environment', async () => {
    const { url } = await started();
    const cli = new Sluice(['console', 'pause', 'reindex', '--url', url], { SLUICE_CONSOLE_TOKEN: TOKEN });
    expect(await cli.exited).toBe(0);
    expect(JSON.parse(cli.stdout.join('\n'))).toEqual({ shards: [0, 1, 2, 3] });
    const bad = new Sluice(['console', 'inspect', '--url', url, '--export', 'x']);
    expect(await bad.exited).toBe(2);
  });
});
