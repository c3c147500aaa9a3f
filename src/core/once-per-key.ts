/**
 * One promise per key, made once and kept while it holds: every caller of `get(key)` shares it, so that work
 * done once per key (a topic checked before its first publish) is done once, and the callers wait in the
 * order they came. A rejected promise is forgotten, so that a later caller makes it again.
 */
export class OncePerKey<K> {
  private readonly made = new Map<K, Promise<void>>();

  /** The promise of `key`: the one made before, else `make()`'s. */
  get(key: K, make: () => Promise<void>): Promise<void> {
    let promise = this.made.get(key);
    if (promise === undefined) {
      const p = make();
      p.catch(() => {
        if (this.made.get(key) === p) this.made.delete(key);
      });
      this.made.set(key, (promise = p));
    }
    return promise;
  }

  /** Forgets every promise: the next caller of each key makes it again. */
  clear(): void {
    this.made.clear();
  }
}
