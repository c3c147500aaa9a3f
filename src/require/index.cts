/** `require('sluice')`: the package's ES module entry, loaded by require(esm) (see ./load.cts). */
import { requireEsm } from './load.cjs';

requireEsm('sluice', () => require('../index.js'));
export * from '../index.js';
