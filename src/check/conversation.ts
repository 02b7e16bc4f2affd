/**
 * The conversation of the legacy era (2024-11-05 … 2025-11-25), the one every
 * MCP client of that era starts with, each answer checked against the few
 * things MCP requires of it. What the server wrote on the wire is judged in
 * transcript.ts; this module judges what it answered.
 *
 *   initialize → notifications/initialized → tools/list → ping → [tools/call]
 *
 * After a failed initialize nothing else is sent (a client would give up
 * there too). After the server has gone, nothing else is sent either.
 */
import { stringValue } from '../wire/json-scan.js';
import { membersOf } from '../wire/jsonrpc.js';
import { isModernVersion, supportedInError, UNSUPPORTED_PROTOCOL_VERSION } from './era.js';
import { describeError, errorCode, Exchange, member, shortList, type ConversationIO, type ConversationResult, type ServerInfo } from './exchange.js';
import { MODERN_PROTOCOL_VERSION, PROTOCOL_VERSIONS, type CheckPlan } from './options.js';
import { checkCallResult, checkTools } from './tools.js';

const PING_ID = 'mcpguard-ping';

/** Speak the legacy conversation, asking for `protocolVersion` in initialize. */
export async function converse(plan: CheckPlan, protocolVersion: string, version: string, io: ConversationIO): Promise<ConversationResult> {
  const talk = new Exchange(io);
  const server: ServerInfo = { protocolVersion: null, name: null, version: null, tools: null };
  const later = { limitMs: plan.timeoutMs, option: '--timeout' };

  const init = await talk.request(
    1,
    'initialize',
    {
      protocolVersion,
      capabilities: {},
      clientInfo: { name: 'mcpguard-check', version },
    },
    { limitMs: plan.startTimeoutMs, option: '--start-timeout' },
  );
  let hasTools = false;
  if (init === null || init.isError) {
    if (init?.isError) talk.fail('initialize', 'error_answer', `initialize: answered with ${describeError(init, io.show)}${modernHint(init)}`);
    talk.halted = true;
  } else {
    const result = init.body;
    const chosen = member(result, 'protocolVersion', 'string');
    // Objects inside the result lie below what the first scan records: rescan each.
    const capabilities = membersOf(init.frame, member(result, 'capabilities', 'object')) ?? undefined;
    const info = membersOf(init.frame, member(result, 'serverInfo', 'object')) ?? undefined;
    if (chosen === undefined) talk.fail('initialize', 'bad_result', 'initialize: the result has no "protocolVersion" string');
    if (capabilities === undefined) talk.fail('initialize', 'bad_result', 'initialize: the result has no "capabilities" object');
    if (info === undefined) talk.fail('initialize', 'bad_result', 'initialize: the result has no "serverInfo" object');
    server.protocolVersion = chosen === undefined ? null : stringValue(init.frame, chosen);
    const name = member(info, 'name', 'string');
    const ver = member(info, 'version', 'string');
    server.name = name === undefined ? null : stringValue(init.frame, name);
    server.version = ver === undefined ? null : stringValue(init.frame, ver);
    hasTools = capabilities?.members?.has('tools') ?? false;
    const negotiated = server.protocolVersion;
    if (negotiated !== null && !(PROTOCOL_VERSIONS as readonly string[]).includes(negotiated)) {
      talk.fail(
        'initialize',
        'bad_result',
        `initialize: the server chose protocol version ${JSON.stringify(negotiated)}, which is not a released MCP version (${PROTOCOL_VERSIONS.join(', ')})`,
      );
    }
    talk.last.detail =
      `protocol ${negotiated ?? '?'}${negotiated !== protocolVersion ? ` (asked for ${protocolVersion})` : ''}, server ${JSON.stringify(server.name)} ${server.version ?? ''}`.trimEnd();
    if (!talk.halted) io.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  }

  const list = await talk.request(2, 'tools/list', {}, later);
  if (list !== null) {
    if (list.isError) {
      // Without the tools capability, "method not found" is the right answer.
      if (hasTools)
        talk.fail(
          'tools/list',
          'error_answer',
          `tools/list: answered with ${describeError(list, io.show)}, although initialize announced the tools capability`,
        );
    } else {
      server.tools = checkTools(list, talk);
      if (server.tools !== null)
        talk.last.detail = `${server.tools.length} tool${server.tools.length === 1 ? '' : 's'}${server.tools.length > 0 ? `: ${shortList(server.tools)}` : ''}`;
    }
  }

  const ping = await talk.request(PING_ID, 'ping', {}, later);
  if (ping !== null) {
    if (ping.isError) talk.fail('ping', 'error_answer', `ping: answered with ${describeError(ping, io.show)}`);
    else if (ping.body.type !== 'object') talk.fail('ping', 'bad_result', `ping: the result is ${ping.body.type}, not an object`);
  }

  if (plan.call !== null) {
    const label = `tools/call ${JSON.stringify(plan.call.name)}`;
    const called = await talk.request(3, 'tools/call', { name: plan.call.name, arguments: plan.call.arguments }, { ...later, label });
    if (called !== null) {
      if (called.isError) talk.fail('tools/call', 'error_answer', `${label}: answered with ${describeError(called, io.show)}`);
      else checkCallResult(called, label, talk);
    }
  }
  return { steps: talk.steps, findings: talk.findings, server };
}

/** A modern-only server refuses initialize with -32022 and the versions it speaks: say what to do instead. */
function modernHint(answer: Parameters<typeof errorCode>[0]): string {
  if (errorCode(answer) !== UNSUPPORTED_PROTOCOL_VERSION) return '';
  const supported = supportedInError(answer);
  const instead = `check it with --protocol-version auto or ${MODERN_PROTOCOL_VERSION}`;
  if (supported === null) return ` (-32022 is how a server of the modern era, which has no initialize, refuses it: ${instead})`;
  if (!supported.some(isModernVersion)) return '';
  return ` (the server supports ${JSON.stringify(supported)}, the modern era, which has no initialize: ${instead})`;
}
