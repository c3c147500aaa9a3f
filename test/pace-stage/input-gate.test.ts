/**
 * InputGate on a ManualClock: how far the timers of a shard taken over may go before it has read its
 * backlog, and what ends the hold: a delivery read as it comes, the consumer's lag at 0, 30 s.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/index.js';
import { FRESH_MS, HOLD_MAX_MS, InputGate, LAG_POLL_MS } from '../../src/pace-stage/input-gate.js';

const T = 1_000_000;

/** A gate over a lag the test sets, counting how often it is asked and how often the gate opened. */
function gateOf(held: boolean, clock = new ManualClock(T)) {
  const lag: { now: number | undefined; asked: number } = { now: undefined, asked: 0 };
  const gate = new InputGate(
    clock,
    () => {
      lag.asked++;
      return Promise.resolve(lag.now);
    },
    held,
  );
  let opened = 0;
  gate.onChange(() => opened++);
  return { gate, lag, clock, opened: () => opened };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('InputGate', () => {
  it('lets the timers of a shard it does not hold fire on the clock, whatever its deliveries’ times', () => {
    const { gate, lag } = gateOf(false);
    gate.input(T - 60_000, T); // a backlog of old events: windows still go by the clock
    expect(gate.held).toBe(false);
    expect(gate.limit(T + 5_000)).toBe(T + 5_000);
    expect(lag.asked).toBe(0);
  });

  it('holds a shard taken over at the newest delivery time read, until a delivery comes as it is appended', async () => {
    const { gate, lag, opened } = gateOf(true);
    await turn();
    expect(lag.asked).toBe(1); // asked at once; not known yet
    expect(gate.limit(T)).toBe(Number.NEGATIVE_INFINITY);
    gate.input(T - 9_000, T);
    gate.input(T - 5_000, T);
    expect(gate.limit(T)).toBe(T - 5_000);
    expect(opened()).toBe(0);
    gate.input(T - FRESH_MS, T);
    expect(gate.held).toBe(false);
    expect(opened()).toBe(1);
    expect(gate.limit(T)).toBe(T);
    gate.close();
  });

  it('opens once the consumer says nothing is unread, asking every 250 ms', async () => {
    const { gate, lag, clock, opened } = gateOf(true);
    lag.now = 3;
    await turn();
    await clock.advance(LAG_POLL_MS - 1);
    expect(lag.asked).toBe(1);
    await clock.advance(1);
    await turn();
    expect(lag.asked).toBe(2);
    lag.now = 0;
    await clock.advance(LAG_POLL_MS);
    await turn();
    expect(gate.held).toBe(false);
    expect(opened()).toBe(1);
    await clock.advance(10 * LAG_POLL_MS);
    expect(lag.asked).toBe(3); // no more asks once open
  });

  it('is never held past 30 s, whatever the lag says or fails to say', async () => {
    const { gate, clock } = gateOf(true); // the broker cannot say (down): lag undefined
    for (let t = 0; t < HOLD_MAX_MS - LAG_POLL_MS; t += LAG_POLL_MS) {
      await clock.advance(LAG_POLL_MS);
      await turn();
    }
    expect(gate.held).toBe(true);
    await clock.advance(LAG_POLL_MS);
    await turn();
    expect(gate.held).toBe(false);
    expect(gate.limit(clock.now())).toBe(clock.now());
  });

  it('asks nothing more once closed', async () => {
    const { gate, lag, clock } = gateOf(true);
    lag.now = 5;
    await turn();
    gate.close();
    await clock.advance(10 * LAG_POLL_MS);
    expect(lag.asked).toBe(1);
  });
});
