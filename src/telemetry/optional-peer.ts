import { SluiceError } from '../core/errors.js';

/** An optional peer dependency: its package name, the range Sluice is tested against, and what needs it. */
export interface OptionalPeer {
  readonly name: string;
  readonly range: string;
  /** The start of the error's message, e.g. `App metrics need`. */
  readonly neededBy: string;
  /** An export the module has, told apart from a CommonJS module seen through its `default`. */
  readonly export: string;
}

/**
 * Loads an optional peer dependency by `load` (a dynamic import), or throws `DEPENDENCY_MISSING` naming the
 * command that installs it. A CommonJS package imported as ESM is its `default`.
 */
export async function loadOptionalPeer<T>(peer: OptionalPeer, load: () => Promise<unknown>): Promise<T> {
  try {
    const loaded = (await load()) as Record<string, unknown> & { default?: T };
    return loaded[peer.export] === undefined && loaded.default !== undefined ? loaded.default : (loaded as T);
  } catch (error) {
    const { code } = (error ?? {}) as { code?: unknown };
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')
      throw new SluiceError(
        'DEPENDENCY_MISSING',
        `${peer.neededBy} the package ${peer.name} (${peer.range}), an optional peer dependency of sluice that is not installed: run \`npm install ${peer.name}@${peer.range}\` in your project`,
        { cause: error },
      );
    throw error;
  }
}
