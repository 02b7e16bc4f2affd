/**
 * The conversation of the modern era (2026-07-28): no handshake, no
 * notifications/initialized and no ping (all three are gone); every request
 * carries the `_meta` envelope (era.ts), and every result must say what it is
 * (`resultType`).
 *
 *   server/discover → tools/list → [tools/call]
 *
 * Under --protocol-version auto the discover was already sent as the probe,
 * on the same process; this module then judges its answer and goes on. An
 * `input_required` answer to tools/call is reported, never fulfilled: the
 * check declares no client capabilities, so it has nothing to answer with.
 */
import { stringValue, type JsonNode } from '../wire/json-scan.js';
import { membersOf } from '../wire/jsonrpc.js';
import { DISCOVER_ID, isModernVersion, requestMeta, stringItems, supportedInError, UNSUPPORTED_PROTOCOL_VERSION } from './era.js';
import { describeError, errorCode, type Exchange, member, shortList, type Answer, type ConversationResult, type ServerInfo } from './exchange.js';
import { MODERN_PROTOCOL_VERSION, type CheckPlan } from './options.js';
import { checkCallResult, checkTools } from './tools.js';

/** Send server/discover as the first request (the probe under auto, the opening under 2026-07-28). */
export function discover(plan: CheckPlan, version: string, talk: Exchange, quiet: boolean): Promise<Answer | null> {
  return talk.request(DISCOVER_ID, 'server/discover', { _meta: requestMeta(version) }, { limitMs: plan.startTimeoutMs, option: '--start-timeout', quiet });
}

/**
 * Judge the discover answer (already in `talk`'s steps when `opened` is
 * given), then list the tools and make the optional call.
 */
export async function converseModern(plan: CheckPlan, version: string, talk: Exchange, opened: { answer: Answer | null } | null): Promise<ConversationResult> {
  const server: ServerInfo = { protocolVersion: null, name: null, version: null, tools: null };
  const answer = opened !== null ? opened.answer : await discover(plan, version, talk, false);
  const hasTools = judgeDiscover(answer, talk, server);
  const meta = requestMeta(version);
  const later = { limitMs: plan.timeoutMs, option: '--timeout' };

  const list = await talk.request(2, 'tools/list', { _meta: meta }, later);
  if (list !== null) {
    if (list.isError) {
      if (hasTools)
        talk.fail(
          'tools/list',
          'error_answer',
          `tools/list: answered with ${describeError(list, talk.io.show)}, although server/discover announced the tools capability`,
        );
    } else {
      resultType(list, 'tools/list', talk, false);
      checkCacheable(list, 'tools/list', talk);
      server.tools = checkTools(list, talk);
      if (server.tools !== null)
        talk.last.detail = `${server.tools.length} tool${server.tools.length === 1 ? '' : 's'}${server.tools.length > 0 ? `: ${shortList(server.tools)}` : ''}`;
    }
  }

  if (plan.call !== null) {
    const label = `tools/call ${JSON.stringify(plan.call.name)}`;
    const called = await talk.request(3, 'tools/call', { name: plan.call.name, arguments: plan.call.arguments, _meta: meta }, { ...later, label });
    if (called !== null) {
      if (called.isError) talk.fail('tools/call', 'error_answer', `${label}: answered with ${describeError(called, talk.io.show)}`);
      else {
        const type = resultType(called, label, talk, true);
        if (type === 'input_required') judgeInputRequired(called, label, talk);
        else if (type === 'complete') checkCallResult(called, label, talk);
      }
    }
  }
  return { steps: talk.steps, findings: talk.findings, server };
}

/** The DiscoverResult: what the server supports and can do. Returns whether it announced tools. */
function judgeDiscover(answer: Answer | null, talk: Exchange, server: ServerInfo): boolean {
  const fail = (message: string) => talk.fail('server/discover', 'bad_result', `server/discover: ${message}`);
  if (answer === null) {
    talk.halted = true;
    return false;
  }
  if (answer.isError) {
    talk.fail('server/discover', 'error_answer', `server/discover: answered with ${describeError(answer, talk.io.show)}${discoverErrorHint(answer)}`);
    talk.halted = true;
    return false;
  }
  resultType(answer, 'server/discover', talk, false);
  checkCacheable(answer, 'server/discover', talk);
  const versions = stringItems(answer.frame, member(answer.body, 'supportedVersions', 'array'));
  const capabilities = membersOf(answer.frame, member(answer.body, 'capabilities', 'object')) ?? undefined;
  if (versions === null) fail(`the result on line ${answer.line} has no "supportedVersions" list of strings`);
  if (capabilities === undefined) fail(`the result on line ${answer.line} has no "capabilities" object`);
  const info = serverInfo(answer);
  server.name = info.name;
  server.version = info.version;
  if (versions !== null && !versions.includes(MODERN_PROTOCOL_VERSION)) {
    // Every later request would be refused with -32022: say so once and stop.
    fail(`the server supports ${JSON.stringify(versions)}, not ${MODERN_PROTOCOL_VERSION}, the modern version mcpguard check speaks`);
    talk.halted = true;
  } else if (versions !== null) server.protocolVersion = MODERN_PROTOCOL_VERSION;
  talk.last.detail = `versions ${versions?.join(', ') ?? '?'}, server ${JSON.stringify(server.name)} ${server.version ?? ''}`.trimEnd();
  return capabilities?.members?.has('tools') ?? false;
}

function discoverErrorHint(answer: Answer): string {
  const supported = supportedInError(answer);
  if (errorCode(answer) === UNSUPPORTED_PROTOCOL_VERSION && supported !== null) {
    return supported.includes(MODERN_PROTOCOL_VERSION)
      ? ` (although it lists ${MODERN_PROTOCOL_VERSION} among ${JSON.stringify(supported)})`
      : ` (the server supports ${JSON.stringify(supported)}; mcpguard check speaks ${MODERN_PROTOCOL_VERSION}${supported.some(isModernVersion) ? '' : ' or, with --protocol-version, a legacy version'})`;
  }
  // Legacy servers do not know server/discover: point at the way to check one.
  return ' (a server of the legacy era? check it with --protocol-version auto, or name its version)';
}

/** `_meta["io.modelcontextprotocol/serverInfo"]` of a result: optional (servers SHOULD send it). */
function serverInfo(answer: Answer): { name: string | null; version: string | null } {
  const meta = membersOf(answer.frame, member(answer.body, '_meta', 'object'));
  const info = membersOf(answer.frame, member(meta, 'io.modelcontextprotocol/serverInfo', 'object'));
  const text = (node: JsonNode | undefined) => (node === undefined ? null : stringValue(answer.frame, node));
  return { name: text(member(info, 'name', 'string')), version: text(member(info, 'version', 'string')) };
}

/**
 * Every 2026-07-28 result carries `resultType`: `complete`, or on tools/call
 * (prompts/get, resources/read) `input_required`. An absent one counts as
 * complete, as clients must treat it, after the finding; an unknown one is
 * invalid and its result is not judged further (null).
 */
function resultType(answer: Answer, label: string, talk: Exchange, inputAllowed: boolean): 'complete' | 'input_required' | null {
  const method = talk.last.method;
  const node = answer.body.members?.get('resultType');
  if (node === undefined) {
    talk.fail(
      method,
      'no_result_type',
      `${label}: the result on line ${answer.line} has no "resultType" (every ${MODERN_PROTOCOL_VERSION} result must carry one)`,
    );
    return 'complete';
  }
  const type = node.type === 'string' ? stringValue(answer.frame, node) : null;
  if (type === 'complete') return type;
  if (type === 'input_required' && inputAllowed) return type;
  if (type === 'input_required') {
    talk.fail(
      method,
      'bad_result',
      `${label}: the result on line ${answer.line} is "input_required", which only tools/call, prompts/get and resources/read may answer`,
    );
  } else {
    talk.fail(
      method,
      'bad_result',
      `${label}: the result on line ${answer.line} has "resultType" ${type === null ? `of type ${node.type}` : JSON.stringify(type)}, which is not one ${MODERN_PROTOCOL_VERSION} defines (a client must treat it as invalid)`,
    );
  }
  return null;
}

/** List and discover results may be cached: they say for how long (`ttlMs`) and for whom (`cacheScope`). */
function checkCacheable(answer: Answer, label: string, talk: Exchange): void {
  const method = talk.last.method;
  const ttl = member(answer.body, 'ttlMs', 'number');
  if (ttl === undefined || Number(answer.frame.toString('latin1', ttl.start, ttl.end)) < 0) {
    talk.fail(method, 'bad_result', `${label}: the result on line ${answer.line} has no "ttlMs" (a number, 0 or more, required in ${MODERN_PROTOCOL_VERSION})`);
  }
  const scope = member(answer.body, 'cacheScope', 'string');
  const scopeText = scope === undefined ? null : stringValue(answer.frame, scope);
  if (scopeText !== 'public' && scopeText !== 'private') {
    talk.fail(
      method,
      'bad_result',
      `${label}: the result on line ${answer.line} has no "cacheScope" of "public" or "private" (required in ${MODERN_PROTOCOL_VERSION})`,
    );
  }
}

/**
 * An InputRequiredResult ends this request: the client would retry it with a
 * new id and the answers. The check reports what was asked and stops there.
 * The server may only ask for what the request's clientCapabilities declared,
 * and the check declares nothing.
 */
function judgeInputRequired(answer: Answer, label: string, talk: Exchange): void {
  const requests = membersOf(answer.frame, answer.body.members?.get('inputRequests'));
  const state = member(answer.body, 'requestState', 'string');
  const step = talk.last;
  step.outcome = 'input_required';
  if (requests === null) talk.fail('tools/call', 'bad_result', `${label}: "inputRequests" on line ${answer.line} is not an object`);
  if (requests === undefined && state === undefined) {
    talk.fail('tools/call', 'bad_result', `${label}: the input_required result on line ${answer.line} has neither "inputRequests" nor "requestState"`);
  }
  const asked: string[] = [];
  for (const [key, request] of requests?.members ?? []) {
    const method = member(membersOf(answer.frame, request) ?? undefined, 'method', 'string');
    const name = method === undefined ? '(no method)' : stringValue(answer.frame, method);
    asked.push(`${name} (${JSON.stringify(key)})`);
    talk.fail(
      'tools/call',
      'undeclared_input',
      `${label}: the input_required result on line ${answer.line} asks for ${name} (${JSON.stringify(key)}), which the request's clientCapabilities did not declare (mcpguard check declares none)`,
    );
  }
  const what = asked.length > 0 ? `asks for ${shortList(asked)}` : state !== undefined ? 'with a requestState only' : 'asks for nothing';
  step.detail = `input_required, ${what}; mcpguard check does not fulfil it`;
}
