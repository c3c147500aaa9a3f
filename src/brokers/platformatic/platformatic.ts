/**
 * The one module that loads @platformatic/kafka at run time: an optional peer dependency, ESM only, that runs
 * on Node.js 22.22 or 24.6 and later (on Node 20 every call fails on a missing `Promise.withResolvers`). It is
 * loaded with a dynamic import, so that a missing package or an older Node is a {@link SluiceError} that says
 * what to do, raised when `sluice/kafka/platformatic` is imported (./client.ts loads it so). The other modules here
 * import it for types only.
 */
import type * as platformatic from '@platformatic/kafka';
import { SluiceError } from '../../core/errors.js';

/** The @platformatic/kafka versions this adapter is written and tested against (package.json's peer range). */
export const PLATFORMATIC_RANGE = '^2.12.1';

/** Whether `version` (`process.versions.node`) is a Node.js that @platformatic/kafka runs on: ≥ 22.22 or ≥ 24.6. */
export function nodeRuns(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major === 22) return minor >= 22;
  if (major === 24) return minor >= 6;
  return major > 24 || major === 23;
}

/** Loads @platformatic/kafka with `load`, or says why it cannot be used here. */
export async function loadPlatformatic(
  load: () => Promise<unknown> = () => import('@platformatic/kafka'),
  node: string = process.versions.node,
): Promise<typeof platformatic> {
  if (!nodeRuns(node))
    throw new SluiceError(
      'RUNTIME_UNSUPPORTED',
      `sluice/kafka/platformatic needs Node.js 22.22 or later (24.6 or later on Node 24), the versions @platformatic/kafka runs on; this is Node.js ${node}: use sluice/kafka (kafkajs) here`,
    );
  try {
    return (await load()) as typeof platformatic;
  } catch (error) {
    const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
    if (code === 'ERR_MODULE_NOT_FOUND' && typeof message === 'string' && message.includes(`'@platformatic/kafka'`))
      throw new SluiceError(
        'DEPENDENCY_MISSING',
        `sluice/kafka/platformatic needs the package @platformatic/kafka (${PLATFORMATIC_RANGE}), an optional peer dependency of sluice that is not installed: run \`npm install @platformatic/kafka@${PLATFORMATIC_RANGE}\` in your project`,
        { cause: error },
      );
    throw error;
  }
}
