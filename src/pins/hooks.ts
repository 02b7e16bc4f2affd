/**
 * The pins and the hidden-character rewriting where answers pass to the
 * client: the server's announcement (initialize, server/discover: its name
 * and instructions), each tools/list page, and tools/call results. The gate
 * calls in here and splices what comes back into the frame.
 */
import { membersOf, memberString } from '../wire/jsonrpc.js';
import { stringValue, type JsonNode } from '../wire/json-scan.js';
import type { Splice } from '../wire/splice.js';
import { emptyFound, mayHide, recorded, revealResult, revealString, revealTool, type Found } from './frames.js';
import type { PinGuard } from './guard.js';
import { addCounts, noCounts, totalOf } from './sanitize.js';

/** Nothing to rewrite: one shared, frozen answer (a tools/call result passes here on every call). */
const NONE: readonly Splice[] = Object.freeze([]);

export interface SanitizeConfig {
  /** Tool names, titles, descriptions and instructions (--sanitize on). */
  definitions: boolean;
  /** Text content of tools/call results (--sanitize-results). */
  results: boolean;
}

const SERVER_INFO_META = 'io.modelcontextprotocol/serverInfo';

export class ToolHooks {
  /** Hidden characters written out this session, by kind. */
  readonly counts = noCounts();
  /** Places already said on stderr (each once). */
  private readonly said = new Set<string>();

  constructor(
    readonly pins: PinGuard,
    private readonly sanitize: SanitizeConfig,
    private readonly diag: (line: string) => void,
    private readonly record: (type: string, body: Record<string, unknown>) => void,
  ) {}

  /** Anything to do at all (else the gate need not exist for this). */
  get active(): boolean {
    return this.pins.active || this.sanitize.definitions || this.sanitize.results;
  }

  /** An initialize or server/discover result: the server's name, and its instructions (splices to apply). */
  announced(frame: Buffer, result: JsonNode, method: string): readonly Splice[] {
    const full = recorded(frame, result);
    if (full.type !== 'object') return NONE;
    const info = method === 'initialize' ? membersOf(frame, full.members!.get('serverInfo')) : metaServerInfo(frame, full);
    this.pins.serverNamed(memberString(frame, info ?? undefined, 'name') ?? null);
    const node = full.members!.get('instructions');
    const text = node?.type === 'string' ? stringValue(frame, node) : undefined;
    if (this.pins.instructions(text) && node !== undefined) {
      // block: the changed instructions are left out (an empty string, so the answer keeps its shape).
      return [{ start: node.start, end: node.end, text: Buffer.from('""') }];
    }
    if (!this.sanitize.definitions) return NONE;
    const found = emptyFound();
    revealString(frame, node, 'instructions', found);
    return this.found(found, method);
  }

  /**
   * A tools/list page on its way to the client (`list` parsed, `node` its
   * array with items recorded). Returns the items to leave out (block) and
   * the splices that make hidden characters visible in the items that stay.
   */
  page(
    frame: Buffer,
    result: JsonNode,
    node: JsonNode,
    list: ReadonlyArray<Record<string, unknown> | null>,
    first: boolean,
  ): { hide: Set<number>; splices: readonly Splice[] } {
    this.pins.serverNamed(memberString(frame, metaServerInfo(frame, result) ?? undefined, 'name') ?? null);
    const last = result.members?.get('nextCursor')?.type !== 'string';
    const hide = this.pins.listed(list, first, last);
    if (!this.sanitize.definitions || !mayHide(frame, node)) return { hide, splices: NONE };
    const found = emptyFound();
    node.items!.forEach((item, i) => {
      if (!hide.has(i) && mayHide(frame, item)) revealTool(frame, item, found);
    });
    return { hide, splices: this.found(found, 'tools/list') };
  }

  /** A tools/call result (--sanitize-results): splices for its text content. */
  result(frame: Buffer, result: JsonNode, tool: string | null): readonly Splice[] {
    if (!this.sanitize.results || !mayHide(frame, result)) return NONE;
    const found = emptyFound();
    revealResult(frame, result, found);
    return this.found(found, `tools/call ${JSON.stringify(tool)}`);
  }

  /** Count, record and say (once per place) what was found. */
  private found(found: Found, where: string): readonly Splice[] {
    if (found.splices.length === 0) return NONE;
    addCounts(this.counts, found.counts);
    this.record('hidden_characters', {
      where,
      places: found.places,
      counts: found.counts,
      session_counts: { ...this.counts },
      session_total: totalOf(this.counts),
    });
    const fresh = found.places.filter((p) => !this.said.has(p));
    if (fresh.length > 0) {
      for (const p of fresh) this.said.add(p);
      this.diag(
        `wrote out ${totalOf(found.counts)} hidden character(s) in ${where} (${fresh.join(', ')}) as \\uXXXX before the client saw them (--sanitize${where.startsWith('tools/call') ? '-results' : ''})`,
      );
    }
    return found.splices;
  }
}

function metaServerInfo(frame: Buffer, result: JsonNode): JsonNode | null {
  const meta = membersOf(frame, result.members?.get('_meta'));
  return membersOf(frame, meta?.members?.get(SERVER_INFO_META)) ?? null;
}
