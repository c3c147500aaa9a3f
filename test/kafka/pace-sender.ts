/**
 * `app.send` round robin over the live instances of a multi-process pace scenario: a few concurrent senders,
 * each sending numbered events of random keys to the instances in turn. A send that an instance did not
 * answer (it exited, or refused: the event may or may not have been recorded) is sent again, with the same
 * event ID, to the next instance, until one answers; and now and then an answered one is sent again to
 * another instance, which must answer it as a duplicate of the same run.
 */
import type { SentEvent } from './pace-checks.js';
import { KEYS, pause, type Instance, type SendCommand, type SentReceipt } from './pace-instances.js';

export class Sender {
  /** How many events each key was sent (numbered 0…next[k]-1), as the checks count them. */
  readonly next = new Array<number>(KEYS).fill(0);
  /** Every event sent, by event ID, with every receipt it got. */
  readonly sent = new Map<string, SentEvent>();
  /** Sends answered (first sends and sends again). */
  answered = 0;
  /** Answered events sent again to another instance, and those whose answer was not the first's duplicate. */
  again = 0;
  readonly notDuplicates: { eventId: string; first: SentReceipt; again: SentReceipt }[] = [];
  /** Every refusal, by code. */
  readonly refusals = new Map<string, string>();
  private turn = 0;
  private running = true;
  private readonly done: Promise<void[]>;

  /** `senders` concurrent senders over keys k0…k<keys-1>. */
  constructor(
    private readonly live: () => Instance[],
    private readonly keys: number,
    senders: number,
  ) {
    this.done = Promise.all(Array.from({ length: senders }, () => this.loop()));
  }

  /** Stops sending; resolves once every event sent so far was answered (rejects if one could not be sent). */
  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  /** Stops sending at once, whatever is in flight (the instances are gone). */
  abandon(): void {
    this.running = false;
    this.done.catch(() => {});
  }

  private async loop(): Promise<void> {
    while (this.running) {
      const k = Math.floor(Math.random() * this.keys);
      const seq = this.next[k]!++;
      const command = { key: `k${k}`, event: { key: `k${k}`, seq }, eventId: `e-k${k}-${seq}` };
      this.sent.set(command.eventId, { key: command.key, seq, receipts: [] });
      const first = await this.deliver(command);
      if (Math.random() < 0.25) {
        this.again++;
        const again = await this.deliver(command, first.by);
        if (
          again.receipt.kind !== 'run' ||
          first.receipt.kind !== 'run' ||
          again.receipt.runId !== first.receipt.runId ||
          !again.receipt.duplicate
        )
          this.notDuplicates.push({ eventId: command.eventId, first: first.receipt, again: again.receipt });
      }
    }
  }

  /** Sends `command` to the instances in turn (other than `not`) until one answers it. */
  private async deliver(command: SendCommand, not?: Instance): Promise<{ by: Instance; receipt: SentReceipt }> {
    for (;;) {
      const live = this.live();
      const others = live.filter((i) => i !== not);
      const pool = others.length > 0 ? others : live;
      if (pool.length === 0) {
        if (this.running) throw new Error(`no instance left to send ${command.eventId} to`);
        return new Promise(() => {}); // abandoned
      }
      const to = pool[this.turn++ % pool.length]!;
      const result = await to.send(command);
      if (result.kind === 'receipt') {
        this.answered++;
        this.sent.get(command.eventId)!.receipts.push(result.receipt);
        return { by: to, receipt: result.receipt };
      }
      if (result.kind === 'refused') {
        this.refusals.set(result.code, result.message);
        await pause(50); // the sender's pace after a refusal, not a wait for anything
      }
    }
  }
}
