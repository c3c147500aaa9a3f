/**
 * A publishTo chain across crashes on @platformatic/kafka, under both group protocols (see
 * ./publishing-crash.ts): three kills a test, since each kill waits for the killed member's session to end.
 */
import { platformaticClients } from './clients.js';
import { publishingCrashSuite } from './publishing-crash.js';

for (const client of platformaticClients) publishingCrashSuite(client, 3);
