/**
 * Sluice is ES modules only: one copy of every class (`SluiceError`, `App`, ...), whether it is loaded by
 * `import` or by `require()`. `require('sluice')` reaches this CommonJS stub (package.json's `require`
 * condition), which loads the same ES module with Node's require(esm): Node 20.19+, 22.12+ and 24 do that
 * unflagged, since no module of Sluice uses top-level await. On a Node that cannot, `require()` fails with
 * the message below, which names the versions that can, instead of Node's bare ERR_REQUIRE_ESM.
 */

/** The Node.js versions whose `require()` loads an ES module without a flag. */
export const REQUIRE_ESM_VERSIONS = '20.19+, 22.12+ or 24+';

/**
 * Runs `load` (a `require` of the ES module behind `specifier`; the stub's `export *` then finds it in
 * Node's cache) and, on a Node that cannot require an ES module, fails saying which versions can.
 */
export function requireEsm<T>(specifier: string, load: () => T): T {
  try {
    return load();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_REQUIRE_ESM') throw error;
    const notice = new Error(
      `require('${specifier}') needs a Node.js that can require() an ES module: ${REQUIRE_ESM_VERSIONS}, without --no-experimental-require-module ` +
        `(this is ${process.version}). ${specifier} is ES modules only. Upgrade Node.js, or load it with import: ` +
        `\`import { ... } from '${specifier}'\` in an ES module, \`await import('${specifier}')\` in CommonJS.`,
      { cause: error },
    );
    (notice as { code?: string }).code = 'ERR_REQUIRE_ESM';
    throw notice;
  }
}
