/**
 * What a group member tells the leader it owns, in the `userData` of its protocol metadata, and how the
 * member keeps track of it between joins.
 *
 * The form, big-endian as Kafka's own: `int16 version` (1), `int32 generation`, `int32 topics`, then per
 * topic `int16 length` and the UTF-8 name, `int32 count` and that many `int32` partitions. A later version
 * may add fields after these, which this one skips; anything it cannot read is a claim to nothing.
 */

/** The version of the claim's form this code writes, and the oldest it reads. */
export const CLAIM_VERSION = 1;

/** The partitions a member was assigned last, per topic, and the group generation it was assigned them in. */
export interface Claim {
  /** The generation of the assignment (a lower bound of it, see {@link MemberClaim}); -1: none. */
  readonly generation: number;
  /** Per topic, its partitions. */
  readonly owned: ReadonlyMap<string, readonly number[]>;
}

/** A claim to nothing: what a member that has no assignment, or an older one, sends. */
export const NO_CLAIM: Claim = { generation: -1, owned: new Map() };

/** The claim in the form of the protocol metadata's `userData`. */
export function encodeClaim(claim: Claim): Buffer {
  const topics = [...claim.owned].map(([topic, partitions]) => ({ name: Buffer.from(topic, 'utf8'), partitions }));
  const size = topics.reduce((n, t) => n + 2 + t.name.length + 4 + 4 * t.partitions.length, 2 + 4 + 4);
  const out = Buffer.alloc(size);
  let at = out.writeInt16BE(CLAIM_VERSION, 0);
  at = out.writeInt32BE(claim.generation, at);
  at = out.writeInt32BE(topics.length, at);
  for (const { name, partitions } of topics) {
    at = out.writeInt16BE(name.length, at);
    at += name.copy(out, at);
    at = out.writeInt32BE(partitions.length, at);
    for (const p of partitions) at = out.writeInt32BE(p, at);
  }
  return out;
}

/**
 * The claim `userData` holds; {@link NO_CLAIM} for an empty one (a member of an older Sluice, or of
 * kafkajs's round-robin) and for anything it cannot read: a claim only ever saves moves, so a member whose
 * claim is lost is dealt partitions as a new one is.
 */
export function decodeClaim(userData: Buffer | null | undefined): Claim {
  if (!userData || userData.length === 0) return NO_CLAIM;
  try {
    let at = 0;
    const int16 = (): number => ((at += 2), userData.readInt16BE(at - 2));
    const int32 = (): number => ((at += 4), userData.readInt32BE(at - 4));
    if (int16() < CLAIM_VERSION) return NO_CLAIM;
    const generation = int32();
    const count = int32();
    const owned = new Map<string, number[]>();
    for (let t = 0; t < count; t++) {
      const length = int16();
      if (length < 0 || at + length > userData.length) return NO_CLAIM;
      const topic = userData.toString('utf8', at, (at += length));
      const n = int32();
      if (n < 0 || at + 4 * n > userData.length) return NO_CLAIM;
      const partitions = Array.from({ length: n }, int32);
      if (partitions.some((p) => p < 0)) return NO_CLAIM;
      owned.set(topic, [...(owned.get(topic) ?? []), ...partitions]);
    }
    return { generation, owned };
  } catch {
    return NO_CLAIM; // read past the end
  }
}

/**
 * What one member claims at its next join: the assignment it got last, and the generation of it. kafkajs
 * tells a member its generation not with its assignment but only with its heartbeats and commits, so an
 * assignment starts with a lower bound (one above the generation of the one before, which it is newer than)
 * and takes the generation of the first heartbeat or commit after it. A lower bound can only make its own
 * claim lose to another, never make a stale claim win over it.
 */
export class MemberClaim {
  private owned = new Map<string, readonly number[]>();
  private generation = -1;
  /** Whether the generation of the assignment is known (a heartbeat or a commit came since). */
  private known = false;

  /** The member's new assignment (kafkajs's GROUP_JOIN), per topic. */
  assigned(assignment: Readonly<Record<string, readonly number[]>>): void {
    this.owned = new Map(Object.entries(assignment).map(([topic, partitions]) => [topic, [...partitions]]));
    this.generation += 1;
    this.known = false;
  }

  /** A heartbeat or commit of the member was answered in `generation`. */
  confirmed(generation: number): void {
    if (this.known || !Number.isInteger(generation)) return;
    this.generation = Math.max(this.generation, generation);
    this.known = true;
  }

  /** The claim to send now. */
  claim(): Claim {
    return { generation: this.generation, owned: this.owned };
  }
}
