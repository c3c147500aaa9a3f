/**
 * The headers a request (`app.request`) carries, and its reply: where the reply goes, the instance that waits
 * for it, and the ID that pairs them.
 */

/** The topic a request's reply is published on. */
export const REPLY_TO_HEADER = 'x-sluice-reply-to';
/** The key a request's reply is published with: the requesting instance's, which reads only its own. */
export const REPLY_KEY_HEADER = 'x-sluice-reply-key';
/** The ID a request carries and its reply carries back. */
export const CORRELATION_HEADER = 'x-sluice-correlation-id';
