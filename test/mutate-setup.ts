/**
 * Set-up of the mutation suite (vitest.mutate.config.ts): a property that fails under a mutant reports its first
 * counterexample at once instead of shrinking it. Shrinking runs the property again hundreds of times, over
 * inputs of thousands of operations in the shard suites: minutes, which Stryker counts as a timeout (not
 * killed) although an assertion failed. The ordinary suite still shrinks, for the smallest counterexample.
 */
import fc from 'fast-check';

fc.configureGlobal({ ...fc.readConfigureGlobal(), endOnFailure: true });
