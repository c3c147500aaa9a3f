/**
 * The shard a key belongs to: FNV-1a (32 bits, over UTF-16 code units) mod `shards`. Stable across
 * processes, versions and machines, since the shard's log on disk depends on it.
 *
 * @param key - the key to place: any string.
 * @param shards - the store's shard count, a positive integer.
 * @returns a shard number from 0 to `shards` − 1.
 *
 * @category Store
 */
export function shardOf(key: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % shards;
}
