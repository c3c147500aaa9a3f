import type { Effects } from './rules.js';

/** The effects handed to the rules, reused from one record to the next. */
export class Fx<O> implements Effects<O> {
  lsn = 0;
  at: number | undefined = undefined;
  changed = false;
  replied: unknown = undefined;
  constructor(
    private readonly queue: Queued<O>[],
    private readonly isMarked: (mark: number, key: string) => boolean = () => false,
  ) {}
  marked(mark: number, key: string): boolean {
    return this.isMarked(mark, key);
  }
  reply(value: unknown): void {
    this.replied = value;
  }
  output(value: O): void {
    this.queue.push({ lsn: this.lsn, value });
  }
  timer(atMs: number | undefined): void {
    this.at = atMs;
    this.changed = true;
  }
}

export interface Queued<O> {
  readonly lsn: number;
  readonly value: O;
}
