/** @platformatic/kafka, loaded once when `sluice/kafka/platformatic` is imported (see ./platformatic.ts). */
import { loadPlatformatic } from './platformatic.js';

export const pk = await loadPlatformatic();
