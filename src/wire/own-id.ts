/**
 * Ids of mcpguard's own requests: its tools/list to the server, its approval
 * cards to the client, its handshake replay after a restart. Either peer may
 * try to forge one (a server opens a request under the id mcpguard's next card
 * will have, and the client's answer to it approves the card; a client sends a
 * request under the id of mcpguard's next tools/list, and the server gets that
 * id twice), so each id:
 *
 *   - carries fresh random digits, drawn per id, not per process: a server
 *     sees every tools/list id and a client every card id, and a part shared
 *     by all ids would tell each of them the rest;
 *   - is checked against the ids in flight on both sides before it is used,
 *     so it is never one a peer already has open, guessed or not.
 */
import { randomBytes } from 'node:crypto';

/** Random bytes in each id (96 bits: not guessable in any number of tries a session can make). */
const RANDOM_BYTES = 12;

/**
 * A new id for mcpguard's own request: `mcpguard-<kind>-<n>-<24 hex digits>`
 * (`n` counts the kind's requests, for people reading logs). `taken` says
 * whether an id key (`s` + the id) is in flight on either side.
 */
export function ownRequestId(kind: string, n: number, taken: (key: string) => boolean): string {
  for (;;) {
    const id = `mcpguard-${kind}-${n}-${randomBytes(RANDOM_BYTES).toString('hex')}`;
    if (!taken(`s${id}`)) return id;
  }
}
