/** Pace across processes on the real broker, batch windows: see pace-scenario-cases.ts. */
import { processScenarios } from './pace-scenario-cases.js';

processScenarios('batch');
