/**
 * The one module that loads kafkajs at run time. kafkajs is an optional peer dependency: `import 'sluice'`
 * never reaches this module, and `sluice/kafka` needs kafkajs installed beside Sluice. A static
 * `import ... from 'kafkajs'` would fail while the module graph is linked, before any code here could run,
 * with Node's bare "Cannot find package 'kafkajs'"; kafkajs is CommonJS, so it is loaded with a synchronous
 * `require` instead (no top-level await, which would stop `require('sluice/kafka')` from working), and a
 * missing kafkajs is a {@link SluiceError} that says what to install. The other modules here import kafkajs
 * for types only (`import type`, erased from the build).
 */
import { createRequire } from 'node:module';
import type * as kafkajs from 'kafkajs';
import { SluiceError } from '../../core/errors.js';

/** The kafkajs versions `sluice/kafka` is written and tested against (package.json's `peerDependencies`). */
export const KAFKAJS_RANGE = '^2.2.4';

/** Loads kafkajs with `load` (Node's `require`, from this module), or says how to install it if it is missing. */
export function loadKafkajs(load: (id: string) => unknown = createRequire(import.meta.url)): typeof kafkajs {
  try {
    return load('kafkajs') as typeof kafkajs;
  } catch (error) {
    if (isMissing(error)) {
      throw new SluiceError(
        'DEPENDENCY_MISSING',
        `sluice/kafka needs the package kafkajs (${KAFKAJS_RANGE}), an optional peer dependency of sluice that is not installed: run \`npm install kafkajs@${KAFKAJS_RANGE}\` in your project`,
        { cause: error },
      );
    }
    throw error;
  }
}

/** Whether `require('kafkajs')` failed because kafkajs itself cannot be found (not a file inside it). */
function isMissing(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === 'MODULE_NOT_FOUND' && typeof message === 'string' && message.split('\n', 1)[0]!.includes(`'kafkajs'`);
}

export const { AssignerProtocol, Kafka, PartitionAssigners, Partitioners, logLevel } = loadKafkajs();
/** The kafkajs client class's instance type, beside the class itself. */
export type Kafka = kafkajs.Kafka;
