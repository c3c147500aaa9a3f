/** `require('sluice/adapter')`: the ports' ES module entry, loaded by require(esm) (see ./load.cts). */
import { requireEsm } from './load.cjs';

requireEsm('sluice/adapter', () => require('../adapter.js'));
export * from '../adapter.js';
