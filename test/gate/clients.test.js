// Real, official clients with the gate's approval card. Each test runs
//
//   client → tap → mcpguard --validate-args=on --policy FILE [--approval-timeout MS] -- tap → server
//
// The tap in front (test/fixtures/tee.mjs) keeps every byte the client and
// mcpguard exchanged; the tap behind it keeps every byte that reached the
// server (the Python fixture also keeps the lines it read itself), so a denied
// call can be shown to leave zero bytes at the server. The person is the
// client's own elicitation handler: it accepts, declines, or does not answer
// in time. Every log mcpguard leaves must verify.
//
// Legacy era: the SDK v1 `Client`, asked by mcpguard's own elicitation/create.
// 2026-07-28: the SDK v2 client, asked by an input_required answer that the
// client's auto-fulfilment turns into a retry carrying the person's answer.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Transport } from '@modelcontextprotocol/client/stdio';
import { BIN, PLANTED_VARS, ROOT, assertNoPlanted, fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { TEE, V2_SERVER, assertAllVerify, killServers, messagesOf, wireOf } from '../helpers/peers.js';

const TIMEOUT = 60000;
/** The deadline of the tests where the person does not answer in time. */
const APPROVAL_MS = 1000;
const APPROVAL_KEY = 'io.mcpguard/approval';
const EVERYTHING = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
/** What turns the gate on; the rest of each command line follows. */
const GATE = (policyFile) => ['--validate-args=on', '--policy', policyFile];

const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  killStarted();
});

const sha256 = (text) => createHash('sha256').update(text).digest('hex');
const toolCalls = (messages) => messages.filter((m) => m.method === 'tools/call');
/** A marker no other byte of the session holds: where it is not, the denied call's arguments are not. */
const marker = (what) => `${what}-${Math.random().toString(36).slice(2, 10)}`;

/**
 * Run `script` with a client made by `connect` against the guarded `server`.
 * Returns the script's result, what the client's handler saw, both taps, the
 * lines the Python fixture read, the record logs, and mcpguard's stderr.
 */
async function session({ connect, server, policy, approvalTimeoutMs, sessions, script }) {
  const tmp = tempDir('mcpguard-clients-');
  const dirs = Object.fromEntries(['clientWire', 'serverWire', 'records', 'pids'].map((name) => [name, join(tmp.dir, name)]));
  for (const name of ['clientWire', 'serverWire', 'pids']) mkdirSync(dirs[name]);
  const policyFile = join(tmp.dir, 'policy.json');
  const linesFile = join(tmp.dir, 'server-lines');
  writeFileSync(policyFile, JSON.stringify(policy));
  const guard = [
    BIN,
    '--record-dir',
    dirs.records,
    ...GATE(policyFile),
    ...(approvalTimeoutMs === undefined ? [] : ['--approval-timeout', String(approvalTimeoutMs)]),
    '--',
    process.execPath,
    TEE,
    dirs.serverWire,
    '--',
    ...server(dirs.pids),
  ];
  const peer = connect({
    command: process.execPath,
    args: [TEE, dirs.clientWire, '--', process.execPath, ...guard],
    cwd: ROOT,
    env: { ...process.env, ...PLANTED_VARS, RECORD_LINES: linesFile },
    stderr: 'pipe',
  });
  const stderr = [];
  peer.transport.stderr.on('data', (chunk) => stderr.push(chunk));
  // The tap in front: killing it closes mcpguard's stdin, and mcpguard ends its child's process group.
  // Only while it is still this test's tap (its command line names this test's directory): a pid can be reused.
  let pid = null;
  const kill = () => {
    pid ??= peer.transport.pid;
    if (pid && isOurs(pid, dirs.clientWire))
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
  };
  cleanups.push(() => {
    kill();
    killServers(dirs.pids);
    tmp.cleanup();
  });
  let result;
  try {
    await peer.client.connect(peer.transport);
    pid = peer.transport.pid;
    result = await script(peer);
  } finally {
    pid ??= peer.transport.pid;
    // close() ends stdin, then escalates to SIGTERM and SIGKILL itself; kill() covers a close() that threw early.
    await peer.client.close().catch(() => {});
    kill();
  }
  const text = Buffer.concat(stderr).toString('utf8');
  assertNoPlanted(text, "mcpguard's stderr");
  assert.doesNotMatch(text, /mcpguard: (rejected|.*is not JSON-RPC|.*not forwarded)/, text);
  const logs = await assertAllVerify(dirs.records, sessions);
  // Every line of these real peers was acceptable: nothing refused as malformed, no era rule broken.
  for (const log of logs) {
    assert.deepEqual(
      log.records.filter((r) => r.type === 'reject'),
      [],
      log.file,
    );
    const end = log.records.find((r) => r.type === 'session_end');
    assert.deepEqual([end.rejected, end.era_violations], [{ client: 0, child: 0 }, {}], log.file);
  }
  return {
    result,
    handled: peer.handled,
    client: wireOf(dirs.clientWire),
    server: wireOf(dirs.serverWire),
    lines: existsSync(linesFile) ? readFileSync(linesFile) : Buffer.alloc(0),
    logs,
    recordDir: dirs.records,
    stderr: text,
  };
}

/** True while `pid` runs a command that names `dir` (without /proc: while `pid` runs at all). */
function isOurs(pid, dir) {
  if (!existsSync('/proc/self/cmdline')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir);
  } catch {
    return false;
  }
}

const callEnds = (log, tool) => log.records.filter((r) => r.type === 'call_end' && r.tool === tool);

/** `mcpguard activity --json` for one session: its call rows. */
async function activityOf(recordDir, log) {
  const { code, stdout, stderr } = await runGuard(['activity', log.records[0].log_id, '--record-dir', recordDir, '--json']).done;
  assert.equal(code, 0, stderr);
  return stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((row) => row.kind === 'call');
}

// ---- legacy era: the SDK v1 Client ----

/**
 * An SDK v1 Client whose person answers mcpguard's card with `answer`:
 * 'accept', 'decline', 'ignore' (never answers; waits for the SDK's abort
 * signal), or null (the client declares no elicitation capability at all).
 */
function v1Client(answer) {
  return (params) => {
    const client = new V1Client({ name: 'mcpguard-clients-v1', version: '1.0.0' }, { capabilities: answer === null ? {} : { elicitation: {} } });
    const handled = [];
    if (answer !== null) {
      client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
        const seen = { id: extra.requestId, message: request.params.message, aborted: null };
        handled.push(seen);
        if (answer === 'accept') return { action: 'accept', content: {} };
        if (answer === 'decline') return { action: 'decline' };
        // Only mcpguard withdrawing its request (notifications/cancelled → the SDK's signal) ends this.
        return new Promise((_, reject) => {
          extra.signal.addEventListener(
            'abort',
            () => {
              seen.aborted = String(extra.signal.reason);
              reject(new Error('the card was withdrawn'));
            },
            { once: true },
          );
        });
      });
    }
    return { client, transport: new V1Transport(params), handled };
  };
}

/**
 * The two servers of the legacy tests: the tool the policy asks about, its
 * arguments, how its real result reads, and a tool that is allowed without
 * asking (called after the asked one: the server was there and answering).
 */
const LEGACY_SERVERS = [
  {
    label: 'server-everything',
    server: () => [EVERYTHING, 'stdio'],
    ask: 'echo',
    args: (mark) => ({ message: mark }),
    ran: (result, mark) => assert.deepEqual(result.content, [{ type: 'text', text: `Echo: ${mark}` }]),
    allowed: { name: 'get-sum', arguments: { a: 2, b: 3 } },
    allowedRan: (result) => assert.deepEqual(result.content, [{ type: 'text', text: 'The sum of 2 and 3 is 5.' }]),
    /** What reached the server: the tap behind mcpguard. */
    reached: (run) => Buffer.concat(run.server.map((p) => p.c2s)),
  },
  {
    label: 'gate-server.py',
    server: () => ['python3', fixture('gate-server.py')],
    ask: 'delete_file',
    args: (mark) => ({ path: `/tmp/${mark}` }),
    ran: (result, mark) =>
      assert.deepEqual(JSON.parse(result.content[0].text), { name: 'delete_file', arguments: { path: `/tmp/${mark}` }, keys: ['arguments', 'name'] }),
    allowed: { name: 'echo', arguments: { text: 'still here' } },
    allowedRan: (result) =>
      assert.deepEqual(JSON.parse(result.content[0].text), { name: 'echo', arguments: { text: 'still here' }, keys: ['arguments', 'name'] }),
    /** What reached the server: the lines the fixture itself read. */
    reached: (run) => run.lines,
  },
];

async function legacyRun(srv, answer, approvalTimeoutMs) {
  const mark = marker(`${srv.ask}-${answer}`);
  const run = await session({
    connect: v1Client(answer),
    server: srv.server,
    sessions: 1,
    approvalTimeoutMs,
    policy: { default: 'allow', rules: [{ tool: srv.ask, decision: 'ask' }] },
    script: async ({ client, handled }) => {
      const asked = await client.callTool({ name: srv.ask, arguments: srv.args(mark) });
      // Whether the handler's request had been aborted by the time the answer came (closing the client aborts it too).
      const abortedBeforeAnswer = handled.map((h) => h.aborted);
      return { asked, abortedBeforeAnswer, allowed: await client.callTool(srv.allowed) };
    },
  });
  const [wire] = run.client;
  const fromClient = messagesOf(wire.c2s);
  const toClient = messagesOf(wire.s2c);
  const askedId = toolCalls(fromClient).find((m) => m.params.name === srv.ask).id;
  assert.equal(toClient.filter((m) => m.id === askedId && !m.method).length, 1, 'exactly one answer to the asked call');
  srv.allowedRan(run.result.allowed);
  const reached = srv.reached(run);
  assert.ok(reached.includes(JSON.stringify(srv.allowed.arguments)), 'the server received the allowed call');
  const [log] = run.logs;
  const ends = callEnds(log, srv.ask);
  assert.equal(ends.length, 1, 'one final record for the asked call');
  return { ...run, mark, fromClient, toClient, reached, end: ends[0], cards: toClient.filter((m) => m.method === 'elicitation/create') };
}

/** The card the client was shown is mcpguard's own question about exactly this call, and the records keep its hash. */
function assertOneCard(run, srv) {
  assert.equal(run.cards.length, 1, 'one card');
  const [card] = run.cards;
  assert.match(String(card.id), /^mcpguard-approval-/);
  assert.equal(run.handled.length, 1, "the client's handler was asked once");
  assert.equal(run.handled[0].id, card.id);
  assert.match(run.handled[0].message, new RegExp(`^Tool: ${srv.ask}$`, 'm'));
  assert.ok(run.handled[0].message.includes(JSON.stringify(srv.args(run.mark))), 'the card shows the arguments as they will be sent');
  assert.equal(run.end.decision.by, 'approval');
  assert.equal(run.end.decision.channel, 'elicitation');
  assert.equal(run.end.decision.card.sha256, sha256(run.handled[0].message), 'the records keep the hash of the text the person saw');
  return card;
}

function assertNeverReached(run) {
  assert.ok(!run.reached.includes(run.mark), 'zero bytes of the denied call reached the server');
  assert.equal(run.end.state, 'denied');
  assert.equal(run.end.dispatched_at, null);
}

describe('SDK v1 Client (legacy era): mcpguard asks through elicitation/create', () => {
  for (const srv of LEGACY_SERVERS) {
    test(`${srv.label}: accept → the tool runs and its real result comes back`, { timeout: TIMEOUT }, async () => {
      const run = await legacyRun(srv, 'accept');
      srv.ran(run.result.asked, run.mark);
      assert.equal(run.result.asked.isError, undefined);
      const card = assertOneCard(run, srv);
      const reply = run.fromClient.find((m) => m.id === card.id);
      assert.deepEqual(reply.result, { action: 'accept', content: {} });
      assert.ok(run.reached.includes(run.mark), 'the approved call reached the server');
      assert.ok(!run.reached.includes(String(card.id)), "the person's answer never reached the server");
      assert.equal(run.end.state, 'completed');
      assert.equal(run.end.decision.card.answer, 'accept');
    });

    test(`${srv.label}: decline → a denial (isError) saying so; zero bytes at the server`, { timeout: TIMEOUT }, async () => {
      const run = await legacyRun(srv, 'decline');
      assert.equal(run.result.asked.isError, true);
      assert.match(run.result.asked.content[0].text, /^mcpguard denied this call before it reached the server: .*answered decline/);
      assertOneCard(run, srv);
      assertNeverReached(run);
      assert.equal(run.end.decision.card.answer, 'decline');
    });

    test(`${srv.label}: no answer → denied after --approval-timeout, and the handler's request is cancelled (its AbortSignal fires)`, {
      timeout: TIMEOUT,
    }, async () => {
      const run = await legacyRun(srv, 'ignore', APPROVAL_MS);
      assert.equal(run.result.asked.isError, true);
      assert.match(run.result.asked.content[0].text, new RegExp(`no answer within --approval-timeout ${APPROVAL_MS} ms`));
      const card = assertOneCard(run, srv);
      assert.match(
        run.result.abortedBeforeAnswer[0] ?? 'the signal had not fired',
        /approval timed out/,
        "the SDK aborted the handler's request before the denial arrived",
      );
      const withdrawn = run.toClient.filter((m) => m.method === 'notifications/cancelled');
      assert.deepEqual(
        withdrawn.map((m) => m.params.requestId),
        [card.id],
        'mcpguard withdrew its own request, and only that',
      );
      assert.equal(run.fromClient.filter((m) => m.id === card.id).length, 0, 'the client never answered the card');
      assertNeverReached(run);
      assert.equal(run.end.decision.card.answer, 'timed_out');
    });

    test(`${srv.label}: a client without the elicitation capability → denied, saying there is no way to ask`, { timeout: TIMEOUT }, async () => {
      const run = await legacyRun(srv, null);
      assert.equal(run.result.asked.isError, true);
      assert.match(run.result.asked.content[0].text, /there is no way to ask/);
      assert.deepEqual(run.cards, [], 'no card was sent to a client that cannot show one');
      assertNeverReached(run);
      assert.equal(run.end.decision.by, 'policy');
    });
  }
});

// ---- 2026-07-28: the SDK v2 client ----

/**
 * An SDK v2 client (pinned to 2026-07-28 unless `mode` says otherwise) that
 * fulfils input requests itself. mcpguard's card (under APPROVAL_KEY, or a
 * legacy elicitation/create from mcpguard) gets `answer`: 'accept', 'decline',
 * or 'late' (accept, once APPROVAL_MS has passed since the card was shown);
 * null: the client declares no elicitation capability. Any other question
 * (the server's own) is accepted with {confirm: true}.
 */
function v2Client(answer, mode = { pin: '2026-07-28' }) {
  return (params) => {
    const capabilities = answer === null ? {} : { elicitation: { form: {} } };
    const client = new V2Client({ name: 'mcpguard-clients-v2', version: '1.0.0' }, { capabilities, versionNegotiation: { mode } });
    const handled = [];
    if (answer !== null)
      client.setRequestHandler('elicitation/create', async (request, ctx) => {
        handled.push({ key: ctx.mcpReq.id, message: request.params.message });
        const mine = ctx.mcpReq.id === APPROVAL_KEY || String(ctx.mcpReq.id).startsWith('mcpguard-approval-');
        if (!mine) return { action: 'accept', content: { confirm: true } };
        if (answer === 'decline') return { action: 'decline' };
        if (answer === 'late') await new Promise((resolve) => setTimeout(resolve, APPROVAL_MS + 500));
        return { action: 'accept', content: {} };
      });
    return { client, transport: new V2Transport(params), handled };
  };
}

const v2Server = (pidDir) => [process.execPath, V2_SERVER, '--pid-dir', pidDir];
const MODERN_POLICY = {
  default: 'allow',
  rules: [
    { tool: 'echo', decision: 'ask' },
    { tool: 'confirm', decision: 'ask' },
  ],
};

async function modernRun(answer, { tool, args, approvalTimeoutMs }) {
  const run = await session({
    connect: v2Client(answer),
    server: v2Server,
    sessions: 2,
    approvalTimeoutMs,
    policy: MODERN_POLICY,
    script: async ({ client }) => ({ version: client.getNegotiatedProtocolVersion(), called: await client.callTool({ name: tool, arguments: args }) }),
  });
  assert.equal(run.result.version, '2026-07-28');
  // The SDK starts the command twice (its server/discover probe, then the session): the session is the one that called.
  const wire = run.client.find((p) => toolCalls(messagesOf(p.c2s)).length > 0);
  const fromClient = toolCalls(messagesOf(wire.c2s));
  const answers = fromClient.map((call) => messagesOf(wire.s2c).filter((m) => m.id === call.id));
  assert.ok(
    answers.every((a) => a.length === 1),
    'exactly one answer to each request',
  );
  const reached = Buffer.concat(run.server.map((p) => p.c2s));
  const log = run.logs.find((l) => callEnds(l, tool).length > 0);
  const legs = callEnds(log, tool);
  assert.equal(legs.length, fromClient.length, 'one final record per request');
  // The first request was answered by mcpguard with its card, never forwarded.
  const card = answers[0][0].result;
  assert.equal(card.resultType, 'input_required');
  assert.deepEqual(Object.keys(card.inputRequests), [APPROVAL_KEY]);
  assert.equal(legs[0].state, 'input_required');
  assert.equal(legs[0].dispatched_at, null);
  assert.equal(legs[0].decision.channel, 'input_required');
  assert.equal(legs[0].decision.card.sha256, sha256(card.inputRequests[APPROVAL_KEY].params.message), 'the records keep the hash of the card');
  // The retry carries the person's answer and mcpguard's sealed state; the records link it to the card's leg.
  assert.equal(fromClient[1].params.requestState, card.requestState);
  assert.equal(legs[1].continues, legs[0].call_id);
  assert.equal(legs[1].linked_by, 'request_state');
  assert.ok(
    legs.every((leg) => leg.chain === legs[0].call_id),
    'every leg is on one chain',
  );
  // activity lists the newest first: the first leg is the last row.
  const rows = (await activityOf(run.recordDir, log)).filter((row) => row.tool === tool).reverse();
  assert.deepEqual(
    rows.map((row) => [row.call_id, row.chain, row.leg]),
    legs.map((leg, i) => [leg.call_id, legs[0].call_id, i + 1]),
    'mcpguard activity shows the legs of one call',
  );
  assert.equal(rows[0].legs, legs.length);
  assert.equal(rows[0].chain_state, legs.at(-1).state);
  const atServer = toolCalls(messagesOf(reached));
  return { ...run, fromClient, answers, reached, atServer, legs, card };
}

describe('SDK v2 client: 2026-07-28 (mcpguard asks with input_required, the client retries), and its legacy fallback', () => {
  test('echo, accept: the retry carries the approval, the tool runs, its real result comes back', { timeout: TIMEOUT }, async (t) => {
    const mark = marker('echo-accept');
    const run = await modernRun('accept', { tool: 'echo', args: { text: mark } });
    assert.deepEqual(run.result.called.content, [{ type: 'text', text: mark }]);
    assert.equal(run.result.called.isError, undefined);
    assert.deepEqual(
      run.handled.map((h) => h.key),
      [APPROVAL_KEY],
      'the person was asked once',
    );
    assert.ok(run.handled[0].message.includes(JSON.stringify({ text: mark })));
    assert.deepEqual(run.fromClient[1].params.inputResponses, { [APPROVAL_KEY]: { action: 'accept', content: {} } });
    assert.equal(run.atServer.length, 1, 'one call reached the server: the approved retry');
    assert.deepEqual(run.atServer[0].params.arguments, { text: mark });
    assert.ok(
      !('inputResponses' in run.atServer[0].params) && !('requestState' in run.atServer[0].params),
      "mcpguard's answer and state were removed before dispatch",
    );
    assert.equal(run.legs[1].state, 'completed');
    assert.equal(run.legs[1].decision.by, 'approval');
    await t.test("the retry's record keeps the person's answer, when it came, and the rule", () => {
      assert.equal(run.legs[1].decision.card?.answer, 'accept');
      assert.ok(run.legs[1].decision.card?.answered_at);
      assert.equal(run.legs[1].decision.rule, 0);
    });
  });

  test('echo, decline: the retry is denied (isError); zero bytes at the server', { timeout: TIMEOUT }, async (t) => {
    const mark = marker('echo-decline');
    const run = await modernRun('decline', { tool: 'echo', args: { text: mark } });
    assert.equal(run.result.called.isError, true);
    assert.match(run.result.called.content[0].text, /^mcpguard denied this call before it reached the server: .*answered decline/);
    assert.deepEqual(
      run.handled.map((h) => h.key),
      [APPROVAL_KEY],
    );
    assert.deepEqual(run.atServer, [], 'no tools/call reached the server');
    assert.ok(!run.reached.includes(mark), 'zero bytes of the denied call reached the server');
    assert.equal(run.legs[1].state, 'denied');
    assert.equal(run.legs[1].dispatched_at, null);
    await t.test("the retry's record keeps the person's answer", () => {
      assert.equal(run.legs[1].decision.card?.answer, 'decline');
    });
  });

  test('echo, the person answers after --approval-timeout: the retry is denied as expired; zero bytes at the server', { timeout: TIMEOUT }, async (t) => {
    const mark = marker('echo-late');
    const run = await modernRun('late', { tool: 'echo', args: { text: mark }, approvalTimeoutMs: APPROVAL_MS });
    assert.equal(run.result.called.isError, true);
    assert.match(run.result.called.content[0].text, /approval expired before the retry arrived/);
    assert.deepEqual(run.fromClient[1].params.inputResponses, { [APPROVAL_KEY]: { action: 'accept', content: {} } }, 'the late answer was an accept');
    const waited = Date.parse(run.legs[1].started_at) - Date.parse(run.legs[0].decision.card.shown_at);
    assert.ok(waited >= APPROVAL_MS, `the retry came ${waited} ms after the card, past the deadline`);
    assert.deepEqual(run.atServer, []);
    assert.ok(!run.reached.includes(mark), 'zero bytes of the denied call reached the server');
    assert.equal(run.legs[1].state, 'denied');
    await t.test("the retry's record says the answer came too late", () => {
      assert.ok(run.legs[1].decision.card?.answered_at);
    });
  });

  test('a client without the elicitation capability → denied at once, saying there is no way to ask; zero bytes at the server', {
    timeout: TIMEOUT,
  }, async () => {
    const mark = marker('echo-nocap');
    const run = await session({
      connect: v2Client(null),
      server: v2Server,
      sessions: 2,
      policy: MODERN_POLICY,
      script: async ({ client }) => ({
        version: client.getNegotiatedProtocolVersion(),
        called: await client.callTool({ name: 'echo', arguments: { text: mark } }),
      }),
    });
    assert.equal(run.result.version, '2026-07-28');
    assert.equal(run.result.called.isError, true);
    assert.match(run.result.called.content[0].text, /there is no way to ask/);
    const reached = Buffer.concat(run.server.map((p) => p.c2s));
    assert.ok(!reached.includes(mark), 'zero bytes of the denied call reached the server');
    const wire = run.client.find((p) => toolCalls(messagesOf(p.c2s)).length > 0);
    assert.equal(toolCalls(messagesOf(wire.c2s)).length, 1, 'no card, so no retry');
    const ends = run.logs.flatMap((log) => callEnds(log, 'echo'));
    assert.deepEqual(
      ends.map((end) => [end.state, end.decision.by]),
      [['denied', 'policy']],
    );
  });

  test('SDK v2 client (auto) ↔ server-everything falls back to the legacy era: the card arrives as elicitation/create and accept runs the tool', {
    timeout: TIMEOUT,
  }, async () => {
    const mark = marker('echo-v2-legacy');
    const run = await session({
      connect: v2Client('accept', 'auto'),
      server: () => [EVERYTHING, 'stdio'],
      sessions: 2,
      policy: MODERN_POLICY,
      script: async ({ client }) => ({
        version: client.getNegotiatedProtocolVersion(),
        called: await client.callTool({ name: 'echo', arguments: { message: mark } }),
      }),
    });
    assert.equal(run.result.version, '2025-11-25');
    assert.deepEqual(run.result.called.content, [{ type: 'text', text: `Echo: ${mark}` }]);
    assert.equal(run.handled.length, 1);
    assert.match(String(run.handled[0].key), /^mcpguard-approval-/);
    const ends = run.logs.flatMap((log) => callEnds(log, 'echo'));
    assert.deepEqual(
      ends.map((end) => [end.state, end.decision.channel, end.decision.card.answer]),
      [['completed', 'elicitation', 'accept']],
    );
  });

  test("confirm: mcpguard's card, then the server's own question; both reach the handler, mcpguard asks once, the final result arrives", {
    timeout: TIMEOUT,
  }, async () => {
    const run = await modernRun('accept', { tool: 'confirm', args: { action: 'deploy' } });
    assert.deepEqual(run.result.called.content, [{ type: 'text', text: 'done: deploy' }]);
    assert.deepEqual(
      run.handled.map((h) => h.key),
      [APPROVAL_KEY, 'confirm'],
      "mcpguard's question, then the server's",
    );
    assert.equal(run.handled[1].message, 'Really deploy?');
    const cards = run.answers.flat().filter((m) => m.result?.inputRequests?.[APPROVAL_KEY]);
    assert.equal(cards.length, 1, 'mcpguard asked the person once');
    assert.deepEqual(run.answers[1][0].result.inputRequests.confirm.params.message, 'Really deploy?', "the server's own question passed through");
    // The server saw the approved call (without mcpguard's answer), then the client's answer to its own question.
    assert.equal(run.atServer.length, 2);
    assert.deepEqual(
      run.atServer.map((m) => Object.keys(m.params.inputResponses ?? {})),
      [[], ['confirm']],
    );
    assert.ok(run.atServer.every((m) => m.params.requestState === undefined));
    assert.deepEqual(
      run.legs.map((leg) => leg.state),
      ['input_required', 'input_required', 'completed'],
    );
    assert.equal(run.legs[2].continues, run.legs[1].call_id);
    assert.equal(run.legs[2].decision.by, 'approval');
    assert.match(run.legs[2].decision.reason, /approved on an earlier leg/);
  });
});
