/** Pace across processes on the real broker, debounce windows: see pace-scenario-cases.ts. */
import { processScenarios } from './pace-scenario-cases.js';

processScenarios('debounce');
