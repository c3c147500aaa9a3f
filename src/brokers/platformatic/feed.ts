import type { Message } from '@platformatic/kafka';
import type { InboundMessage } from '../../core/message.js';
import { PlatformaticInbound } from './inbound.js';

/** A message as this adapter reads it: bytes throughout. */
export type Record = Message<Buffer, Buffer, Buffer, Buffer>;

/**
 * One owned partition of a {@link PlatformaticConsumer}: messages read and not taken, where the app's work
 * stands (the committable offset) and what the coordinator took.
 */
export class Feed {
  private messages: Record[] = [];
  private head = 0;
  /**
   * The offset after the last message read: a message read again below it (the client rewinds to the committed
   * offset at a join) is dropped.
   */
  next: number | undefined;
  /** The offset of the first message read in this assignment: where a revoke with nothing finished resumes. */
  first: number | undefined;
  /** The offset after the last message taken: where the app's reading stands. */
  position: number | undefined;
  /** Everything below it is finished: what may be committed. */
  committable: number | undefined;
  /** The last offset the coordinator took. */
  committed: number | undefined;
  /** The leader epoch of the last message read, sent with its commit. */
  leaderEpoch = -1;
  paused = false;
  /** Being revoked: nothing more is handed out or read; its finished work is still committed. */
  revoked = false;

  constructor(readonly partition: number) {}

  /** Keeps `m` unless it was read before in this assignment. */
  admit(m: Record): boolean {
    const offset = Number(m.offset);
    if (this.revoked || (this.next !== undefined && offset < this.next)) return false;
    this.next = offset + 1;
    this.first ??= offset;
    this.leaderEpoch = m.leaderEpoch;
    this.messages.push(m);
    return true;
  }

  buffered(): number {
    return this.messages.length - this.head;
  }

  /** Moves up to `room` messages into `out`; returns how many. */
  takeInto(out: InboundMessage[], room: number): number {
    const end = Math.min(this.messages.length, this.head + room);
    for (let i = this.head; i < end; i++) out.push(new PlatformaticInbound(this.messages[i]!));
    const n = end - this.head;
    if (n > 0) this.position = Number(this.messages[end - 1]!.offset) + 1;
    if (end === this.messages.length) {
      this.messages = [];
      this.head = 0;
    } else this.head = end;
    return n;
  }

  clear(): void {
    this.messages = [];
    this.head = 0;
  }

  markCommittable(offset: number): void {
    if (this.committable === undefined || offset > this.committable) this.committable = offset;
  }

  /**
   * Where the partition's reading resumes once it is let go: after what was finished, else where this
   * assignment began reading; undefined when it read nothing.
   */
  resume(): number | undefined {
    return this.committable ?? this.first;
  }

  /** Finished work the coordinator has not taken. */
  pending(): boolean {
    return this.committable !== undefined && (this.committed === undefined || this.committable > this.committed);
  }
}
