/** Reading Prometheus's text format in tests: the value of one series. */

/** The value of `name{labels}` in `text` (labels matched as a subset), or undefined when there is no such series. */
export function valueOf(text: string, name: string, labels: Record<string, string | number> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have: Record<string, string | undefined> = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === String(v))) return Number(m[3]);
  }
  return undefined;
}
