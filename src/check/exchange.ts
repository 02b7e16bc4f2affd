/**
 * The client side of the check, shared by both eras: one request at a time,
 * each answer matched by id (transcript.ts) and timed, each outcome kept as a
 * step of the report. What the answers must contain is judged by the era's
 * conversation (conversation.ts, modern.ts); this module only waits for them.
 */
import { nodeText, stringValue, type JsonNode } from '../wire/json-scan.js';
import type { RequestId, Response } from '../wire/jsonrpc.js';
import type { Sent, Transcript } from './transcript.js';

export type StepOutcome = 'answered' | 'error' | 'input_required' | 'timeout' | 'gone' | 'stopped' | 'not_sent';

export interface Step {
  method: string;
  /** The method, with the tool's name for tools/call. */
  label: string;
  id: RequestId;
  outcome: StepOutcome;
  /** Milliseconds from sending to the answer, when there was one. */
  ms: number | null;
  /** A short description of the answer for the report. */
  detail: string;
}

export interface BehaviourFinding {
  /** unanswered, error_answer, bad_result, tool_is_error, …; or an exit kind (run.ts). */
  kind: string;
  /** The request it is about, for the conversation's findings. */
  step?: string;
  message: string;
}

export interface ConversationIO {
  transcript: Transcript;
  write(frame: string): void;
  /** Untrusted bytes as a quoted, escaped string with secrets masked. */
  show(bytes: Buffer, max?: number): string;
  /** Resolves when the server has exited and its stdout was read to the end. */
  gone: Promise<void>;
  /** Resolves when mcpguard was interrupted. */
  stopped: Promise<void>;
}

export interface ServerInfo {
  protocolVersion: string | null;
  name: string | null;
  version: string | null;
  tools: string[] | null;
}

export interface ConversationResult {
  steps: Step[];
  findings: BehaviourFinding[];
  server: ServerInfo;
}

/** An answer and the stdout line it came on. */
export type Answer = Response & { line: number };

export interface RequestOptions {
  label?: string;
  limitMs: number;
  /** The option that sets the limit, named when it runs out. */
  option: string;
  /** No finding when there is no answer: the probe, whose silence is an answer too. */
  quiet?: boolean;
}

export class Exchange {
  readonly steps: Step[] = [];
  readonly findings: BehaviourFinding[] = [];
  /** Nothing more is sent: the opening failed, the server has gone, or mcpguard was interrupted. */
  halted = false;

  constructor(readonly io: ConversationIO) {}

  fail(step: string, kind: string, message: string): void {
    this.findings.push({ kind, step, message });
  }

  /** The step of the last request. */
  get last(): Step {
    return this.steps[this.steps.length - 1]!;
  }

  /** Send one request and wait for its answer; null when there is none to judge. */
  async request(id: RequestId, method: string, params: object, options: RequestOptions): Promise<Answer | null> {
    const label = options.label ?? method;
    if (this.halted) {
      this.steps.push({ method, label, id, outcome: 'not_sent', ms: null, detail: 'not sent' });
      return null;
    }
    const sent = this.io.transcript.expect(id, method);
    this.io.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    const outcome = await this.wait(sent, options.limitMs);
    if (outcome !== 'answered') {
      this.halted = outcome !== 'timeout';
      const detail =
        outcome === 'timeout'
          ? `no response within ${options.option} ${options.limitMs} ms`
          : outcome === 'gone'
            ? 'no response before the server exited'
            : 'no response before mcpguard was interrupted';
      this.steps.push({ method, label, id, outcome, ms: null, detail });
      if (outcome !== 'stopped' && options.quiet !== true) this.fail(method, 'unanswered', `${label}: ${detail}`);
      return null;
    }
    const response = sent.response!;
    const ms = sent.answeredAt! - sent.sentAt;
    this.steps.push({
      method,
      label,
      id,
      outcome: response.isError ? 'error' : 'answered',
      ms,
      detail: response.isError ? describeError(response, this.io.show) : '',
    });
    return { ...response, line: sent.answeredLine! };
  }

  private async wait(sent: Sent, ms: number): Promise<'answered' | 'timeout' | 'gone' | 'stopped'> {
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      sent.answered.then(() => 'answered' as const),
      this.io.gone.then(() => 'gone' as const),
      this.io.stopped.then(() => 'stopped' as const),
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms))),
    ]);
    clearTimeout(timer);
    // The answer may have been read in the same turn as the exit.
    return sent.response !== null ? 'answered' : outcome;
  }
}

/** A member of `node` of the given type, or undefined. */
export function member(node: JsonNode | undefined | null, key: string, type: JsonNode['type']): JsonNode | undefined {
  const found = node?.members?.get(key);
  return found?.type === type ? found : undefined;
}

/** `error CODE "message"` of an error answer, the message bounded and masked. */
export function describeError(response: Response, show: ConversationIO['show']): string {
  // jsonrpc.ts has checked that code is an integer and message a string.
  const code = response.body.members?.get('code');
  const text = response.body.members?.get('message');
  const codeText = code === undefined ? '?' : nodeText(response.frame, code);
  const messageText = text?.type === 'string' ? show(Buffer.from(stringValue(response.frame, text)), 200) : '""';
  return `error ${codeText} ${messageText}`;
}

/** The code of an error answer, as a number. */
export function errorCode(response: Response): number | null {
  const code = response.body.members?.get('code');
  return code === undefined ? null : Number(nodeText(response.frame, code));
}

export function shortList(names: string[]): string {
  const shown = names.slice(0, 8).join(', ');
  return names.length > 8 ? `${shown}, … (+${names.length - 8})` : shown;
}
