/**
 * FNV-1a, 32 bits, over the UTF-16 code units of a string. Lanes use it to pick a lane from a key; it is
 * independent of Kafka's murmur2 partitioner, so n lanes over n partitions still spread a partition's keys.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
