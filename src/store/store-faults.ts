import type { Faults } from '../core/ports.js';
import { fileLogSteps, type FileLogSteps } from './file-shard-log.js';
import { readFrame } from './frame.js';

/**
 * The file store's part of the simulator's broken engines (see `Faults`): the steps of its shard logs, each
 * broken one replacing the correct one (`fileLogSteps`) when its fault is injected. `skipCrc` reads frames
 * without checking their CRC; `skipDirSync` uses a new segment without fsyncing its directory, nor naming it
 * in the manifest (whose write would sync the directory too).
 */
export function faultyLogSteps(faults: Faults): FileLogSteps {
  return {
    readFrame: faults.skipCrc
      ? (buf, pos, minLsn, maxLsn) => readFrame(buf, pos, minLsn, maxLsn, false)
      : fileLogSteps.readFrame,
    syncNewSegment: faults.skipDirSync ? () => undefined : fileLogSteps.syncNewSegment,
  };
}
