/**
 * Session grants: a person who approves a call on its card may say "allow
 * this tool for the rest of the session" (`session-tool`), or "for the rest
 * of the session, with exactly these arguments" (`session-same-arguments`),
 * instead of "once". A grant answers only the question a policy `ask` would
 * ask again: the schema check, a held pin change and a policy `deny` come
 * first, every time.
 *
 * A grant lives in this process's memory and nowhere else: nothing a peer
 * sends, and nothing written to the records, can bring one back, so it ends
 * with the session. It is bound to the tool's exact name (no case folding,
 * no Unicode normalisation: `Echo`, a Cyrillic `е` or a name with a
 * zero-width character are other tools) and to the SHA-256 of the tool's
 * definition as the card showed it: a tool whose definition changed since
 * (a new listing, list_changed, a restart) has lost its grant, and its next
 * call is asked about as it is now. `session-same-arguments` is bound to the
 * argument bytes as the card showed them (their own text, not a
 * re-serialisation: `{"a":1}` and `{"a": 1}` are different answers).
 * And it answers only the question its card asked: the policy rule that
 * asked (or the default). A call the policy asks about for another reason
 * (a rule that asks when the arguments carry a secret, or a rate is passed)
 * gets its own card.
 */
import { createHash } from 'node:crypto';
import { memberString, memberType, membersOf } from '../wire/jsonrpc.js';
import type { JsonNode } from '../wire/json-scan.js';

/** What a card offers, narrowest first; `once` is what an answer without a scope means. */
export const SCOPES = ['once', 'session-same-arguments', 'session-tool'] as const;
export type Scope = (typeof SCOPES)[number];
/** A card that offers no grant (a held pin change: accepting it updates the pin, once). */
export const ONCE_ONLY: readonly Scope[] = ['once'];

/** The member of the card's form that carries the scope. */
export const SCOPE_FIELD = 'scope';

/** Most grants a session keeps (a client that grants without end cannot grow memory; oldest forgotten first). */
export const MAX_GRANTS = 4096;

/** A grant, as the records of the calls it allows point at it. */
export interface Grant {
  tool: string;
  scope: Exclude<Scope, 'once'>;
  /** SHA-256 of the tool's pinned definition, as the approving card showed it. */
  definition: string;
  /** The policy rule whose question the card answered (0-based; null: the policy's default). */
  rule: number | null;
  /** SHA-256 of the argument bytes (`session-same-arguments`), else null. */
  args: string | null;
  /** The call whose card granted it, and how and when it was answered. */
  callId: string;
  channel: string | null;
  grantedAt: string;
}

/**
 * The scope an answer chose. `answer` is the answer object (`{action,
 * content}`): no `content`, or no `scope` in it, is `once` (a client that
 * shows only accept/decline); a scope the card did not offer (unknown, not a
 * string, a grant on a card that offered none) is an error: the answer does
 * not fit the card, and is not taken as an approval of anything.
 */
export function answeredScope(frame: Buffer, answer: JsonNode | undefined, offered: readonly Scope[]): Scope | { error: string } {
  const object = membersOf(frame, answer);
  if (!object) return 'once';
  const content = object.members!.get('content');
  if (content === undefined || content.type === 'null') return 'once';
  const fields = membersOf(frame, content);
  if (fields === null || fields === undefined) return { error: 'its content is not an object' };
  const type = memberType(fields, SCOPE_FIELD);
  if (type === undefined) return 'once';
  return checkScope(type === 'string' ? memberString(frame, fields, SCOPE_FIELD)! : null, offered);
}

/** A scope given as a value (--approve-cmd's answer): one the card offered, else an error. Null: not a string. */
export function checkScope(value: string | null, offered: readonly Scope[]): Scope | { error: string } {
  if (value !== null && (offered as readonly string[]).includes(value)) return value as Scope;
  const given = value === null ? 'a scope that is not a string' : `scope ${JSON.stringify(value.slice(0, 64))}${value.length > 64 ? '…' : ''}`;
  return { error: `it chose ${given}, which the card did not offer (it offered ${offered.join(', ')})` };
}

/** The grants of one session, by exact tool name. */
export class Grants {
  private readonly byTool = new Map<string, Array<Grant & { seq: number }>>();
  private count = 0;
  private seq = 0;

  /** Keep a grant (a `once` answer keeps nothing). */
  add(grant: Omit<Grant, 'args'>, argBytes: Buffer): Grant {
    const kept = { ...grant, args: grant.scope === 'session-same-arguments' ? argsHash(argBytes) : null, seq: this.seq++ };
    const list = this.byTool.get(grant.tool) ?? [];
    list.push(kept);
    this.byTool.set(grant.tool, list);
    if (++this.count > MAX_GRANTS) this.forgetOldest();
    return kept;
  }

  /**
   * The grant that allows this call without asking, if any: `rule` is the
   * policy rule that asks about it now. `definition` is the tool's definition
   * hash as the gate knows it now (null: not known, so nothing can be shown
   * to be the granted tool). Grants of an older definition are dropped here:
   * the tool they were given for is gone.
   */
  covering(tool: string, definition: string | null, argBytes: Buffer, rule: number | null): Grant | null {
    const list = this.byTool.get(tool);
    if (list === undefined || definition === null) return null;
    const current = list.filter((g) => g.definition === definition);
    if (current.length !== list.length) {
      this.count -= list.length - current.length;
      if (current.length === 0) this.byTool.delete(tool);
      else this.byTool.set(tool, current);
    }
    const asked = current.filter((g) => g.rule === rule);
    const whole = asked.find((g) => g.scope === 'session-tool');
    if (whole !== undefined) return whole;
    if (asked.length === 0) return null;
    const hash = argsHash(argBytes);
    return asked.find((g) => g.args === hash) ?? null;
  }

  /** Whether any grant names this exact tool. */
  has(tool: string): boolean {
    return this.byTool.has(tool);
  }

  /** How many grants are kept (for tests of the bound). */
  get size(): number {
    return this.count;
  }

  private forgetOldest(): void {
    let oldest: [string, number] | null = null;
    for (const [tool, list] of this.byTool) if (oldest === null || list[0]!.seq < oldest[1]) oldest = [tool, list[0]!.seq];
    if (oldest === null) return;
    const list = this.byTool.get(oldest[0])!;
    list.shift();
    if (list.length === 0) this.byTool.delete(oldest[0]);
    this.count--;
  }
}

function argsHash(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}
