/**
 * Sealed approval state for MCP 2026-07-28. There, mcpguard asks for approval
 * by answering the `tools/call` itself with `input_required`, and the client
 * retries with a new request. Nothing ties the retry to the call that was
 * shown except what mcpguard put in `requestState`: so the state is sealed
 * (HMAC-SHA256 with a key that exists only in this process) over the tool
 * name and the exact bytes of the arguments, with a one-time nonce and the
 * card's deadline. A retry is authorized only if the seal verifies, the
 * retried arguments are byte for byte the ones shown, the deadline has not
 * passed, and the nonce was not used before.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const PREFIX = 'mcpguard1.';
/** Nonces issued and not yet used, with their deadlines (bounded: oldest forgotten first). */
const MAX_OPEN = 4096;

/** `spent`: the state was genuine and is now used up (it expired); a retry cannot use it again. */
export type Unsealed = { ok: true; nonce: string } | { ok: false; reason: string; spent?: true };

export class ApprovalSeal {
  private readonly key = randomBytes(32);
  private readonly open = new Map<string, number>();

  /** A requestState for a card about `tool` with these exact argument bytes, valid until `expiresAt`. */
  seal(tool: string, argumentBytes: Buffer, expiresAt: number): string {
    const nonce = randomBytes(12).toString('base64url');
    this.open.set(nonce, expiresAt);
    if (this.open.size > MAX_OPEN) this.open.delete(this.open.keys().next().value!);
    const body = `${nonce}.${expiresAt}.${digest(tool, argumentBytes)}`;
    return `${PREFIX}${body}.${this.mac(body)}`;
  }

  /**
   * Whether `state` is a state this process issued: well-formed and signed
   * with its key, whatever else is wrong with it (spent, expired, another
   * call's). The prefix alone proves nothing: a server may choose any state,
   * and one that does not verify is the server's, passed through unchanged.
   */
  isOurs(state: string): boolean {
    return this.parse(state) !== null;
  }

  /** Check a retry's state against its tool and argument bytes; a good state can be used once. */
  unseal(state: string, tool: string, argumentBytes: Buffer, now = Date.now()): Unsealed {
    const parts = this.parse(state);
    if (parts === null) return { ok: false, reason: 'the approval state is not one this mcpguard process issued' };
    const [nonce, expires, hash] = parts;
    if (hash !== digest(tool, argumentBytes)) return { ok: false, reason: 'the retried call is not the one that was approved (tool or arguments changed)' };
    if (!this.open.has(nonce)) return { ok: false, reason: 'the approval state was already used' };
    this.open.delete(nonce);
    if (now > Number(expires)) return { ok: false, reason: 'the approval expired before the retry arrived', spent: true };
    return { ok: true, nonce };
  }

  /** A state's nonce, deadline and digest when its MAC verifies under this process's key; else null. */
  private parse(state: string): [string, string, string] | null {
    if (!state.startsWith(PREFIX)) return null;
    const parts = state.slice(PREFIX.length).split('.');
    if (parts.length !== 4) return null;
    const [nonce, expires, hash, mac] = parts as [string, string, string, string];
    const expected = Buffer.from(this.mac(`${nonce}.${expires}.${hash}`));
    const given = Buffer.from(mac);
    return given.length === expected.length && timingSafeEqual(given, expected) ? [nonce, expires, hash] : null;
  }

  private mac(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}

function digest(tool: string, argumentBytes: Buffer): string {
  return createHash('sha256').update(tool).update('\0').update(argumentBytes).digest('base64url');
}
