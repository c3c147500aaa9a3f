/** `require('sluice/testing')`: the testing helpers' ES module entry, loaded by require(esm) (see ./load.cts). */
import { requireEsm } from './load.cjs';

requireEsm('sluice/testing', () => require('../testing.js'));
export * from '../testing.js';
