/**
 * Everything the server wrote on stdout, judged as raw bytes, line by line,
 * with the same framing and the same classifier as the relay. Each line is a
 * protocol message or a finding; nothing is skipped and nothing is repaired.
 * A response is also matched against the requests the check sent, by id and
 * id type (`1` and `"1"` are different requests).
 *
 * Memory is bounded however much the server writes: lines are not kept, only
 * counted, and at most MAX_FINDINGS findings are stored (the rest counted).
 *
 * The era decides what else may appear. Legacy: server-to-client requests
 * are legal and answered. Modern (2026-07-28): the stdio transport forbids
 * them, and only a few notifications exist, so anything else is a finding.
 * While the era is still being probed, such lines are held (with their line
 * number and bytes) and become findings only if the server turns out modern.
 */
import { LineSplitter, type LineEvent } from '../wire/framing.js';
import { classifyFrame, idKey, PARSE_ERROR, type Request, type RequestId, type Response } from '../wire/jsonrpc.js';

export const MAX_FINDINGS = 100;
/** Methods of server-to-client requests remembered for the report. */
const MAX_SERVER_REQUESTS = 20;

export type StdoutFindingKind =
  | 'non_protocol'
  | 'invalid_jsonrpc'
  | 'unknown_id'
  | 'duplicate_response'
  | 'partial_line'
  | 'oversize_line'
  | 'server_request'
  | 'unknown_notification';

/** What the server's stdout is judged by: the era of the session, or not known yet (probing). */
export type TranscriptEra = 'legacy' | 'modern' | 'probing';

/**
 * The notifications a 2026-07-28 server may write (ServerNotification in the
 * schema); everything else, notifications/initialized for one, no longer exists.
 */
export const MODERN_SERVER_NOTIFICATIONS: ReadonlySet<string> = new Set([
  'notifications/progress',
  'notifications/message',
  'notifications/cancelled',
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
  'notifications/subscriptions/acknowledged',
]);

export interface StdoutFinding {
  kind: StdoutFindingKind;
  line: number;
  /** The line's first bytes, escaped and quoted (secrets masked). */
  bytes: string;
  /** Length of the line in bytes, its newline included when it had one. */
  length: number;
  reason: string;
  /** One line for a person, e.g. `non-protocol stdout on line 1: "loading\n" (…)`. */
  message: string;
}

const LABEL: Record<StdoutFindingKind, string> = {
  non_protocol: 'non-protocol stdout',
  invalid_jsonrpc: 'invalid JSON-RPC',
  unknown_id: 'response to an unknown id',
  duplicate_response: 'second response',
  partial_line: 'last line without newline',
  oversize_line: 'oversize line',
  server_request: 'server-to-client request',
  unknown_notification: 'notification the era does not have',
};

/** A request the check sent, and what became of it. */
export interface Sent {
  id: RequestId;
  method: string;
  sentAt: number;
  response: Response | null;
  answeredAt: number | null;
  /** The stdout line that carried the answer. */
  answeredLine: number | null;
  answered: Promise<void>;
}

export interface TranscriptOptions {
  maxFrameBytes: number;
  allowBatch: boolean;
  /** Untrusted bytes as a quoted, escaped string with secrets masked (see run.ts). */
  show: (bytes: Buffer) => string;
  /** A request from the server in the legacy era; the caller answers it. */
  onServerRequest: (request: Request) => void;
  era: TranscriptEra;
}

/** A held line keeps only what its finding would show, not its bytes: a flood of them stays small. */
type Held = { kind: StdoutFindingKind; line: number; bytes: string; length: number; reason: string };

export class Transcript {
  bytes = 0;
  messages = 0;
  notifications = 0;
  readonly serverRequests: string[] = [];
  readonly findings: StdoutFinding[] = [];
  omittedFindings = 0;
  private readonly sent = new Map<string, Sent & { resolve: () => void }>();
  private readonly splitter: LineSplitter;
  private ended = false;
  private era: TranscriptEra;
  /** Lines that are findings only in the modern era, seen while probing. */
  private held: Held[] = [];
  private heldOmitted = 0;

  constructor(private readonly options: TranscriptOptions) {
    this.era = options.era;
    this.splitter = new LineSplitter(options.maxFrameBytes, (event) => this.judge(event));
  }

  /**
   * The probe has decided: lines held while probing become findings (modern)
   * or are dropped (legacy). Findings stay in line order.
   */
  decide(era: 'legacy' | 'modern'): void {
    if (this.era !== 'probing') return;
    this.era = era;
    const held = this.held;
    this.held = [];
    if (era === 'legacy') return;
    for (const h of held) this.record(h.kind, h.line, h.bytes, h.length, h.reason);
    this.omittedFindings += this.heldOmitted;
    this.findings.sort((a, b) => a.line - b.line);
  }

  get lines(): number {
    return this.splitter.lines;
  }

  push(chunk: Buffer): void {
    this.bytes += chunk.length;
    this.splitter.push(chunk);
  }

  /** End of stdout (or it was cut): judge a last line without newline. Idempotent. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.splitter.end();
  }

  /** Register a request before writing it, so that a fast answer is matched. */
  expect(id: RequestId, method: string): Sent {
    let resolve!: () => void;
    const answered = new Promise<void>((r) => (resolve = r));
    const sent = { id, method, sentAt: Date.now(), response: null, answeredAt: null, answeredLine: null, answered, resolve };
    this.sent.set(idKey(id), sent);
    return sent;
  }

  private judge(event: LineEvent): void {
    if (event.kind === 'oversize') {
      return this.find('oversize_line', event.line, event.head, event.bytes, `${event.bytes} bytes, over --max-frame-bytes ${this.options.maxFrameBytes}`);
    }
    if (event.kind === 'partial') {
      const whole = classifyFrame(Buffer.concat([event.bytes, Buffer.from('\n')]), this.options);
      const reason = whole.kind === 'invalid' ? whole.reason : 'a JSON-RPC message, but the newline that ends it is missing';
      return this.find('partial_line', event.line, event.bytes, event.bytes.length, reason);
    }
    const frame = event.frame;
    const message = classifyFrame(frame, this.options);
    if (message.kind === 'invalid') {
      const kind = message.code === PARSE_ERROR ? 'non_protocol' : 'invalid_jsonrpc';
      return this.find(kind, event.line, frame, frame.length, message.reason);
    }
    const items = message.kind === 'batch' ? message.items : [message];
    for (const item of items) {
      if (item.kind !== 'response') continue;
      const sent = this.sent.get(item.idKey);
      if (sent === undefined) return this.find('unknown_id', event.line, frame, frame.length, this.unknownIdReason(item.id));
      if (sent.response !== null) return this.find('duplicate_response', event.line, frame, frame.length, `id ${JSON.stringify(item.id)} was already answered`);
    }
    this.messages++;
    for (const item of items) {
      if (item.kind === 'notification') {
        this.notifications++;
        if (!MODERN_SERVER_NOTIFICATIONS.has(item.method)) {
          this.eraRule('unknown_notification', event.line, frame, `${item.method} is not a notification of protocol 2026-07-28`);
        }
      } else if (item.kind === 'request') {
        if (this.serverRequests.length < MAX_SERVER_REQUESTS) this.serverRequests.push(item.method);
        // Not answered in the modern era: a client there must not write responses.
        if (this.era === 'legacy') this.options.onServerRequest(item);
        this.eraRule(
          'server_request',
          event.line,
          frame,
          `${item.method}: the 2026-07-28 stdio transport forbids requests on the server's stdout; they travel in input_required results`,
        );
      } else {
        const sent = this.sent.get(item.idKey)!;
        sent.response = item;
        sent.answeredAt = Date.now();
        sent.answeredLine = event.line;
        sent.resolve();
      }
    }
  }

  /** A line that breaks a rule of the modern era: a finding there, held while probing, legal in the legacy era. */
  private eraRule(kind: StdoutFindingKind, line: number, frame: Buffer, reason: string): void {
    if (this.era === 'modern') this.find(kind, line, frame, frame.length, reason);
    else if (this.era === 'probing') {
      if (this.held.length < MAX_FINDINGS) this.held.push({ kind, line, bytes: this.options.show(frame), length: frame.length, reason });
      else this.heldOmitted++;
    }
  }

  /** Names the likely mistake when the id matches a request of the other type. */
  private unknownIdReason(id: RequestId): string {
    const other = typeof id === 'number' ? idKey(String(id)) : typeof id === 'string' && /^-?\d+$/.test(id) ? idKey(Number(id)) : null;
    const twin = other === null ? undefined : this.sent.get(other);
    if (twin !== undefined)
      return `no request with id ${JSON.stringify(id)} was sent; ${twin.method} was sent with id ${JSON.stringify(twin.id)} (the id's type must be kept)`;
    return `no request with id ${JSON.stringify(id)} was sent`;
  }

  private find(kind: StdoutFindingKind, line: number, raw: Buffer, length: number, reason: string): void {
    // Checked before quoting: past the cap, a flood of bad lines costs no copies.
    if (this.findings.length >= MAX_FINDINGS) {
      this.omittedFindings++;
      return;
    }
    this.record(kind, line, this.options.show(raw), length, reason);
  }

  private record(kind: StdoutFindingKind, line: number, bytes: string, length: number, reason: string): void {
    if (this.findings.length >= MAX_FINDINGS) {
      this.omittedFindings++;
      return;
    }
    const message = `${LABEL[kind]} on line ${line}: ${bytes} (${reason})`;
    this.findings.push({ kind, line, bytes, length, reason, message });
  }
}
