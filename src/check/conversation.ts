/**
 * The client side of the check: the conversation every MCP client starts
 * with, one request at a time, each answer checked against the request (by id)
 * and against the few things MCP requires of it. What the server wrote on the
 * wire is judged in transcript.ts; this module judges what it answered.
 *
 *   initialize → notifications/initialized → tools/list → ping → [tools/call]
 *
 * After a failed initialize nothing else is sent (a client would give up
 * there too). After the server has gone, nothing else is sent either.
 */
import { scanJson, stringValue, nodeText, type JsonNode } from '../json-scan.js';
import { membersOf, type RequestId, type Response } from '../jsonrpc.js';
import { PROTOCOL_VERSIONS, type CheckPlan } from './options.js';
import type { Sent, Transcript } from './transcript.js';

export type StepOutcome = 'answered' | 'error' | 'timeout' | 'gone' | 'stopped' | 'not_sent';

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
  /** unanswered, error_answer, bad_result, tool_is_error; or an exit kind (run.ts). */
  kind: string;
  /** The request it is about, for the conversation's findings. */
  step?: string;
  message: string;
}

export interface ServerInfo {
  protocolVersion: string | null;
  name: string | null;
  version: string | null;
  tools: string[] | null;
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

export interface ConversationResult {
  steps: Step[];
  findings: BehaviourFinding[];
  server: ServerInfo;
}

const PING_ID = 'mcpguard-ping';

export async function converse(plan: CheckPlan, version: string, io: ConversationIO): Promise<ConversationResult> {
  const steps: Step[] = [];
  const findings: BehaviourFinding[] = [];
  const server: ServerInfo = { protocolVersion: null, name: null, version: null, tools: null };
  const fail = (step: string, kind: string, message: string) => findings.push({ kind, step, message });
  let halted = false;

  /** Send one request and wait for its answer; null when there is none to judge. */
  async function request(id: RequestId, method: string, params: object, label = method): Promise<Response | null> {
    if (halted) {
      steps.push({ method, label, id, outcome: 'not_sent', ms: null, detail: 'not sent' });
      return null;
    }
    const sent = io.transcript.expect(id, method);
    io.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    const [limit, option] = method === 'initialize' ? [plan.startTimeoutMs, '--start-timeout'] : [plan.timeoutMs, '--timeout'];
    const outcome = await wait(sent, limit);
    if (outcome !== 'answered') {
      halted = outcome !== 'timeout';
      const detail = outcome === 'timeout' ? `no response within ${option} ${limit} ms`
        : outcome === 'gone' ? 'no response before the server exited' : 'no response before mcpguard was interrupted';
      steps.push({ method, label, id, outcome, ms: null, detail });
      if (outcome !== 'stopped') fail(method, 'unanswered', `${label}: ${detail}`);
      return null;
    }
    const response = sent.response!;
    const ms = sent.answeredAt! - sent.sentAt;
    steps.push({ method, label, id, outcome: response.isError ? 'error' : 'answered', ms, detail: response.isError ? describeError(response, io.show) : '' });
    return response;
  }

  async function wait(sent: Sent, ms: number): Promise<'answered' | 'timeout' | 'gone' | 'stopped'> {
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      sent.answered.then(() => 'answered' as const),
      io.gone.then(() => 'gone' as const),
      io.stopped.then(() => 'stopped' as const),
      new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms))),
    ]);
    clearTimeout(timer);
    // The answer may have been read in the same turn as the exit.
    return sent.response !== null ? 'answered' : outcome;
  }

  const step = () => steps[steps.length - 1]!;

  const init = await request(1, 'initialize', {
    protocolVersion: plan.protocolVersion,
    capabilities: {},
    clientInfo: { name: 'mcpguard-check', version },
  });
  let hasTools = false;
  if (init === null || init.isError) {
    if (init?.isError) fail('initialize', 'error_answer', `initialize: answered with ${describeError(init, io.show)}`);
    halted = true;
  } else {
    const result = init.body;
    const chosen = member(result, 'protocolVersion', 'string');
    // Objects inside the result lie below what the first scan records: rescan each.
    const capabilities = membersOf(init.frame, member(result, 'capabilities', 'object')) ?? undefined;
    const info = membersOf(init.frame, member(result, 'serverInfo', 'object')) ?? undefined;
    if (chosen === undefined) fail('initialize', 'bad_result', 'initialize: the result has no "protocolVersion" string');
    if (capabilities === undefined) fail('initialize', 'bad_result', 'initialize: the result has no "capabilities" object');
    if (info === undefined) fail('initialize', 'bad_result', 'initialize: the result has no "serverInfo" object');
    server.protocolVersion = chosen === undefined ? null : stringValue(init.frame, chosen);
    const name = member(info, 'name', 'string');
    const ver = member(info, 'version', 'string');
    server.name = name === undefined ? null : stringValue(init.frame, name);
    server.version = ver === undefined ? null : stringValue(init.frame, ver);
    hasTools = capabilities?.members?.has('tools') ?? false;
    const negotiated = server.protocolVersion;
    if (negotiated !== null && !(PROTOCOL_VERSIONS as readonly string[]).includes(negotiated)) {
      fail('initialize', 'bad_result', `initialize: the server chose protocol version ${JSON.stringify(negotiated)}, which is not a released MCP version (${PROTOCOL_VERSIONS.join(', ')})`);
    }
    step().detail = `protocol ${negotiated ?? '?'}${negotiated !== plan.protocolVersion ? ` (asked for ${plan.protocolVersion})` : ''}, server ${JSON.stringify(server.name)} ${server.version ?? ''}`.trimEnd();
    if (!halted) io.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  }

  const list = await request(2, 'tools/list', {});
  if (list !== null) {
    if (list.isError) {
      // Without the tools capability, "method not found" is the right answer.
      if (hasTools) fail('tools/list', 'error_answer', `tools/list: answered with ${describeError(list, io.show)}, although initialize announced the tools capability`);
    } else {
      server.tools = checkTools(list, fail);
      if (server.tools !== null) step().detail = `${server.tools.length} tool${server.tools.length === 1 ? '' : 's'}${server.tools.length > 0 ? `: ${shortList(server.tools)}` : ''}`;
    }
  }

  const ping = await request(PING_ID, 'ping', {});
  if (ping !== null) {
    if (ping.isError) fail('ping', 'error_answer', `ping: answered with ${describeError(ping, io.show)}`);
    else if (ping.body.type !== 'object') fail('ping', 'bad_result', `ping: the result is ${ping.body.type}, not an object`);
  }

  if (plan.call !== null) {
    const label = `tools/call ${JSON.stringify(plan.call.name)}`;
    const called = await request(3, 'tools/call', { name: plan.call.name, arguments: plan.call.arguments }, label);
    if (called !== null) {
      if (called.isError) fail('tools/call', 'error_answer', `${label}: answered with ${describeError(called, io.show)}`);
      else if (called.body.members?.get('isError')?.type === 'true') {
        step().detail = 'result with "isError": true';
        fail('tools/call', 'tool_is_error', `${label}: the result has "isError": true: ${io.show(called.frame.subarray(called.body.start, called.body.end))}`);
      } else if (member(called.body, 'content', 'array') === undefined) {
        fail('tools/call', 'bad_result', `${label}: the result has no "content" array`);
      }
    }
  }
  return { steps, findings, server };
}

/** A member of `node` of the given type, or undefined. */
function member(node: JsonNode | undefined, key: string, type: JsonNode['type']): JsonNode | undefined {
  const found = node?.members?.get(key);
  return found?.type === type ? found : undefined;
}

function describeError(response: Response, show: ConversationIO['show']): string {
  // jsonrpc.ts has checked that code is an integer and message a string.
  const code = response.body.members?.get('code');
  const text = response.body.members?.get('message');
  const codeText = code === undefined ? '?' : nodeText(response.frame, code);
  const messageText = text?.type === 'string' ? show(Buffer.from(stringValue(response.frame, text)), 200) : '""';
  return `error ${codeText} ${messageText}`;
}

/**
 * `result.tools` must be an array of tools, each with a `name` string and an
 * `inputSchema` object. The array's items lie below the depth the first scan
 * records, so the array's own bytes are scanned again, as a top-level value.
 */
function checkTools(list: Response, fail: (step: string, kind: string, message: string) => void): string[] | null {
  const tools = list.body.members?.get('tools');
  if (tools?.type !== 'array') {
    fail('tools/list', 'bad_result', 'tools/list: the result has no "tools" array');
    return null;
  }
  const scanned = scanJson(list.frame, tools.start, tools.end);
  if (!scanned.ok) return null; // cannot happen: the same bytes passed the first scan
  const names: string[] = [];
  for (const [index, tool] of (scanned.value.items ?? []).entries()) {
    const name = tool.members?.get('name');
    const shown = name?.type === 'string' ? JSON.stringify(stringValue(list.frame, name)) : `number ${index + 1}`;
    if (name?.type !== 'string') fail('tools/list', 'bad_result', `tools/list: tool ${shown} has no "name" string`);
    else names.push(stringValue(list.frame, name));
    if (tool.members?.get('inputSchema')?.type !== 'object') fail('tools/list', 'bad_result', `tools/list: tool ${shown} has no "inputSchema" object`);
  }
  return names;
}

function shortList(names: string[]): string {
  const shown = names.slice(0, 8).join(', ');
  return names.length > 8 ? `${shown}, … (+${names.length - 8})` : shown;
}
