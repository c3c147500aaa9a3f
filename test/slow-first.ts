/**
 * Vitest's file order: the files that take longest start first, so that with several workers the last
 * minutes are not one long file running alone. Vitest orders by the durations it cached from the last
 * run, which a clean clone lacks; these files are known to be long (they wait on a real broker, on child
 * processes or on many seeds), so they go first whatever the cache says, longest first, then the rest as
 * vitest orders them.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Path fragments of the long files, the longest first (figures in docs/testing.md). */
const LONG = [
  'test/kafka/pace-scenarios-',
  'test/kafka/faults.test.ts',
  'test/kafka/platformatic-publishing-crash.test.ts',
  'test/kafka/paced-publishing-crash.test.ts',
  'test/kafka/platformatic-faults.test.ts',
  'test/store/crash.test.ts',
  'test/sim/',
  'test/kafka/pace-send-routing.test.ts',
  'test/project/examples.test.ts',
  'test/pace-stage/pace-crash.test.ts',
  'test/kafka/kafka.test.ts',
  'test/kafka/kafka-store.test.ts',
  'test/store/lock.test.ts',
  'test/pace-stage/shard-host-crash.test.ts',
  'test/kafka/',
];

const rank = (file: string): number => {
  const at = LONG.findIndex((fragment) => file.includes(fragment));
  return at === -1 ? LONG.length : at;
};

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return sorted
      .map((spec, i) => ({ spec, i, rank: rank(spec.moduleId.split('\\').join('/')) }))
      .sort((a, b) => a.rank - b.rank || a.i - b.i)
      .map((s) => s.spec);
  }
}
