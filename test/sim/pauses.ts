/**
 * The simulated world's pauses: now and then a paced subscriber is paused, or resumed if it was paused last,
 * and every one is resumed before the quiet phase. What was asked and acknowledged, with the world's time
 * then, goes in the history's `pauses` for `heldWhilePaused` (checkers.ts).
 */
import type { App } from '../../src/index.js';
import type { History } from './checkers.js';

/** The subscribers the world pauses and resumes. */
export const PAUSABLE = ['deb', 'pm', 'clk'] as const;

export class Pauses {
  /** The subscribers paused last (asked, acknowledged or not). */
  private readonly paused = new Set<string>();

  constructor(private readonly history: NonNullable<History['pauses']>) {}

  /** Pauses `sub` on `app`, or resumes it if it was paused last; `now()` is the world's time, `dead()` the life's end. */
  toggle(app: App, sub: string, now: () => number, dead: () => boolean): void {
    if (this.paused.delete(sub)) {
      this.history.push({ sub, op: 'resume', asked: now() });
      return void app.resume(sub).catch(() => {});
    }
    this.paused.add(sub);
    const asked: (typeof this.history)[number] = { sub, op: 'pause', asked: now() };
    this.history.push(asked);
    app.pause(sub).then(
      () => void (dead() || (asked.acked = now())),
      () => {},
    );
  }

  /** Resumes every pausable subscriber, paused or not: a pause never acknowledged may be durable. */
  resumeAll(app: App, now: () => number): void {
    for (const sub of PAUSABLE) {
      this.paused.add(sub);
      this.toggle(app, sub, now, () => false);
    }
  }
}
