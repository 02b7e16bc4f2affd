// Session grants on the approval card: the person answers a card "once",
// "this tool with these exact arguments for the session" or "this tool for
// the session", through the official SDK clients as they are (v1: mcpguard's
// own elicitation/create; v2 on 2026-07-28: input_required and the retry;
// --approve-cmd's answer is in grants-approve-cmd.test.js). The servers
// record every byte they read, so each test counts the calls that reached
// them; every log must verify.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Transport } from '@modelcontextprotocol/client/stdio';
import { BIN, ROOT, fixture, killStarted, readLines, runGuard, tempDir } from '../helpers/run.js';
import { TEE, V2_SERVER, assertAllVerify, killServers, messagesOf, wireOf } from '../helpers/peers.js';
import { callEnds } from '../helpers/conversation.js';

const TIMEOUT = 60000;
const APPROVAL_KEY = 'io.mcpguard/approval';
const GATE_SERVER = () => ['python3', fixture('gate-server.py')];
const accept = (scope) => ({ action: 'accept', content: scope === undefined ? {} : { scope } });

const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  killStarted();
});

/** SIGKILL `pid` while it still runs a command that names `dir` (a pid can be reused). */
function killIfOurs(pid, dir) {
  try {
    if (pid && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)) process.kill(pid, 'SIGKILL');
  } catch {}
}

/**
 * mcpguard with this policy in front of `server`, driven by a real SDK
 * client (`make(params, answers)` → {client, transport, handled}) whose
 * person gives `answers` to the cards, in order. Returns the script's result,
 * the cards the handler saw, the tools/call lines that reached the server,
 * and the records.
 */
async function guarded({ make, policy, answers, args = [], server = GATE_SERVER, env = {}, sessions = 1, script }) {
  const tmp = tempDir('mcpguard-grants-');
  const dirs = { records: join(tmp.dir, 'records'), wire: join(tmp.dir, 'server-wire'), pids: join(tmp.dir, 'pids') };
  mkdirSync(dirs.wire);
  mkdirSync(dirs.pids);
  const policyFile = join(tmp.dir, 'policy.json');
  const lines = join(tmp.dir, 'server-lines');
  writeFileSync(policyFile, JSON.stringify(policy));
  const params = {
    command: process.execPath,
    args: [BIN, '--record-dir', dirs.records, '--validate-args=on', '--policy', policyFile, ...args, '--', ...server(dirs)],
    cwd: ROOT,
    env: { ...process.env, RECORD_LINES: lines, ...env },
    stderr: 'pipe',
  };
  const peer = make(params, [...answers]);
  let pid = null;
  cleanups.push(() => {
    killIfOurs(pid, tmp.dir);
    killServers(dirs.pids);
    tmp.cleanup();
  });
  let result;
  try {
    await peer.client.connect(peer.transport);
    pid = peer.transport.pid;
    result = await script(peer.client, tmp.dir);
  } finally {
    pid ??= peer.transport.pid;
    await peer.client.close().catch(() => {});
    killIfOurs(pid, tmp.dir);
  }
  const logs = await assertAllVerify(dirs.records, sessions);
  const fromWire = wireOf(dirs.wire).flatMap((p) => messagesOf(p.c2s));
  const atServer = (existsSync(lines) ? readLines(lines).map((l) => JSON.parse(l)) : fromWire).filter((m) => m.method === 'tools/call');
  return { result, handled: peer.handled, atServer, logs, recordDir: dirs.records, dir: tmp.dir };
}

/** An SDK v1 client (legacy era) whose person answers each card with the next of `answers`. */
function v1(params, answers) {
  const client = new V1Client({ name: 'mcpguard-grants-v1', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const handled = [];
  client.setRequestHandler(ElicitRequestSchema, (request) => {
    handled.push(request.params);
    return answers.shift() ?? { action: 'decline' };
  });
  return { client, transport: new V1Transport(params), handled };
}

/** An SDK v2 client on 2026-07-28: mcpguard's card (under APPROVAL_KEY) gets the next of `answers`. */
function v2(params, answers) {
  const client = new V2Client(
    { name: 'mcpguard-grants-v2', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  const handled = [];
  client.setRequestHandler('elicitation/create', async (request, ctx) => {
    handled.push({ key: ctx.mcpReq.id, ...request.params });
    return answers.shift() ?? { action: 'decline' };
  });
  return { client, transport: new V2Transport(params), handled };
}

/** The final records of the calls of `tool`, in order. */
const endsOf = (logs, tool) => logs.flatMap((log) => callEnds(log.records)).filter((r) => r.tool === tool);
const argsAt = (run, tool) => run.atServer.filter((m) => m.params.name === tool).map((m) => m.params.arguments);

async function activityJson(recordDir, log) {
  const { code, stdout, stderr } = await runGuard(['activity', log.records[0].log_id, '--record-dir', recordDir, '--json']).done;
  assert.equal(code, 0, stderr.toString());
  return stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((row) => row.kind === 'call');
}

const ASK_DELETE = {
  default: 'allow',
  rules: [
    { tool: 'delete_*', when: { properties: { path: { pattern: '^/etc/' } }, required: ['path'] }, decision: 'deny', reason: 'not /etc' },
    { tool: 'delete_*', decision: 'ask' },
    { tool: '*', decision: 'ask' },
  ],
};

describe('SDK v1 client (legacy era): the card offers a scope, and a session grant spares later cards', () => {
  test('session-tool: the same tool with other arguments reaches the server with no card; another tool still gets one; a deny rule still denies; records, activity and show name the grant', {
    timeout: TIMEOUT,
  }, async () => {
    const run = await guarded({
      make: v1,
      policy: ASK_DELETE,
      answers: [accept('session-tool'), accept()],
      script: async (client) => {
        const out = [];
        for (const [name, args] of [
          ['delete_file', { path: '/tmp/a' }],
          ['delete_file', { path: '/tmp/b' }],
          ['delete_file', { path: '/etc/passwd' }],
          ['exec', { command: 'ls' }],
          ['exec', { command: 'pwd' }],
        ])
          out.push(await client.callTool({ name, arguments: args }));
        return out;
      },
    });
    // The card offered the scopes, once first and by default (2025-11-25, the SDK's version: titled choices).
    const scope = run.handled[0].requestedSchema.properties.scope;
    assert.deepEqual(
      scope.oneOf.map((o) => o.const),
      ['once', 'session-same-arguments', 'session-tool'],
    );
    assert.equal(scope.default, 'once');
    assert.equal(run.handled.length, 3, 'cards: delete_file once, then exec twice (its "once" covers one call)');
    assert.deepEqual(
      run.handled.map((h) => /^Tool: (.*)$/m.exec(h.message)[1]),
      ['delete_file', 'exec', 'exec'],
    );
    assert.deepEqual(argsAt(run, 'delete_file'), [{ path: '/tmp/a' }, { path: '/tmp/b' }], 'the granted tool ran twice; /etc never reached the server');
    assert.deepEqual(argsAt(run, 'exec'), [{ command: 'ls' }], 'the other tool ran once; its second card was declined');
    assert.equal(run.result[2].isError, true);
    assert.match(run.result[2].content[0].text, /denied by policy rule 1 \(not \/etc\)/);
    assert.equal(run.result[4].isError, true);
    const [a, b, etc] = endsOf(run.logs, 'delete_file');
    assert.equal(a.decision.by, 'approval');
    assert.equal(a.decision.channel, 'elicitation');
    assert.equal(a.decision.scope, 'session-tool');
    assert.equal(a.decision.card.answer, 'accept');
    assert.deepEqual([b.state, b.decision.by, b.decision.card], ['completed', 'grant', null]);
    assert.deepEqual(b.decision.grant, { call_id: a.call_id, scope: 'session-tool', channel: 'elicitation', granted_at: a.decision.card.answered_at });
    assert.equal(b.decision.rule, 1);
    assert.deepEqual([etc.state, etc.decision.by], ['denied', 'policy']);
    const [once] = endsOf(run.logs, 'exec');
    assert.equal(once.decision.scope, 'once');
    // The views: activity's rows (JSON and the table's note), and show of the granted call.
    const rows = await activityJson(run.recordDir, run.logs[0]);
    const row = rows.find((r) => r.call_id === b.call_id);
    assert.deepEqual(row.approval, {
      by: 'grant',
      channel: 'elicitation',
      answer: null,
      scope: 'session-tool',
      answered_at: a.decision.card.answered_at,
      grant_of: a.call_id,
    });
    assert.deepEqual(rows.find((r) => r.call_id === a.call_id).approval.scope, 'session-tool');
    const table = await runGuard(['activity', run.logs[0].records[0].log_id, '--record-dir', run.recordDir]).done;
    assert.match(table.stdout.toString(), new RegExp(`allowed without a card: the session-tool grant of call ${a.call_id}`));
    assert.match(table.stdout.toString(), /approval card: accept \(session-tool\), through the client's elicitation/);
    const shown = await runGuard(['show', b.call_id, '--record-dir', run.recordDir]).done;
    assert.equal(shown.code, 0, shown.stderr.toString());
    assert.match(shown.stdout.toString(), /decision\.by\s+grant/);
    assert.match(shown.stdout.toString(), new RegExp(`decision\\.grant\\s+session-tool grant of call ${a.call_id} \\(elicitation, `));
  });

  test('session-same-arguments: the same argument bytes again pass with no card; changed arguments get a card', { timeout: TIMEOUT }, async () => {
    const run = await guarded({
      make: v1,
      policy: ASK_DELETE,
      answers: [accept('session-same-arguments'), { action: 'decline' }],
      script: async (client) => [
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/same' } }),
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/same' } }),
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/other' } }),
      ],
    });
    assert.equal(run.handled.length, 2, 'a card for the first call and for the changed arguments');
    assert.deepEqual(argsAt(run, 'delete_file'), [{ path: '/tmp/same' }, { path: '/tmp/same' }]);
    assert.equal(run.result[2].isError, true);
    const [first, second, third] = endsOf(run.logs, 'delete_file');
    assert.equal(first.decision.scope, 'session-same-arguments');
    assert.equal(second.decision.grant.call_id, first.call_id);
    assert.deepEqual([third.state, third.decision.by, third.decision.card.answer], ['denied', 'approval', 'decline']);
  });

  test('a grant answers only the rule that asked: a call another ask rule matches (a secret-looking path) gets its own card', {
    timeout: TIMEOUT,
  }, async () => {
    const policy = {
      default: 'allow',
      rules: [
        { tool: 'delete_file', when: { properties: { path: { pattern: 'secret' } }, required: ['path'] }, decision: 'ask', reason: 'a secret path' },
        { tool: 'delete_file', decision: 'ask' },
      ],
    };
    const run = await guarded({
      make: v1,
      policy,
      answers: [accept('session-tool'), { action: 'decline' }],
      script: async (client) => {
        for (const path of ['/tmp/plain', '/tmp/plain2', '/tmp/secret']) await client.callTool({ name: 'delete_file', arguments: { path } });
      },
    });
    assert.equal(run.handled.length, 2);
    assert.match(run.handled[1].message, /Asked because: policy rule 1 \(a secret path\)/);
    assert.deepEqual(argsAt(run, 'delete_file'), [{ path: '/tmp/plain' }, { path: '/tmp/plain2' }]);
  });

  test('a client that shows only accept/decline (no scope in its answer) approves once: the next call gets a card', { timeout: TIMEOUT }, async () => {
    const run = await guarded({
      make: v1,
      policy: ASK_DELETE,
      answers: [{ action: 'accept' }, accept()],
      script: async (client) => [
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/x' } }),
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/x' } }),
      ],
    });
    assert.equal(run.handled.length, 2);
    assert.equal(run.handled[0].requestedSchema.properties.scope.default, 'once');
    assert.deepEqual(
      endsOf(run.logs, 'delete_file').map((e) => [e.state, e.decision.by, e.decision.scope]),
      [
        ['completed', 'approval', 'once'],
        ['completed', 'approval', 'once'],
      ],
    );
  });

  test('a hostile answer: a scope the card did not offer (unknown, another case, not a string) is refused, zero bytes at the server; and grants nothing', {
    timeout: TIMEOUT,
  }, async () => {
    const run = await guarded({
      make: v1,
      policy: ASK_DELETE,
      answers: [accept('forever'), accept('SESSION-TOOL'), accept(7), { action: 'accept', content: { scope: 'session-tool ' } }, accept()],
      script: async (client) => {
        const out = [];
        for (const path of ['/tmp/h1', '/tmp/h2', '/tmp/h3', '/tmp/h4', '/tmp/h5'])
          out.push(await client.callTool({ name: 'delete_file', arguments: { path } }));
        return out;
      },
    });
    assert.equal(run.handled.length, 5, 'every call was asked: no hostile answer left a grant');
    for (const r of run.result.slice(0, 4)) {
      assert.equal(r.isError, true);
      assert.match(r.content[0].text, /not approved: the answer does not fit the card: it chose .*which the card did not offer/);
    }
    assert.deepEqual(argsAt(run, 'delete_file'), [{ path: '/tmp/h5' }], 'only the plain accept reached the server');
    const ends = endsOf(run.logs, 'delete_file');
    assert.deepEqual(
      ends.map((e) => [e.state, e.decision.card.answer, e.decision.scope ?? null]),
      [...Array(4).fill(['denied', 'accept', null]), ['completed', 'accept', 'once']],
    );
  });

  test('a grant for one tool never covers another, nor a look-alike name (case, Cyrillic і, a zero-width space)', { timeout: TIMEOUT }, async () => {
    const names = ['Delete_file', 'delete_f\u0456le', 'delete_file\u200b'];
    const run = await guarded({
      make: v1,
      policy: ASK_DELETE,
      env: { LOOKALIKES: '1' },
      answers: [accept('session-tool')],
      script: async (client) => {
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/real' } });
        for (const name of names) await client.callTool({ name, arguments: { path: '/tmp/alike' } });
        await client.callTool({ name: 'delete_file', arguments: { path: '/tmp/again' } });
      },
    });
    assert.deepEqual(
      run.handled.map((h) => /^Tool: (.*)$/m.exec(h.message)[1]),
      ['delete_file', 'Delete_file', 'delete_f\u0456le', 'delete_file\\u200b'],
      'each look-alike was asked about on its own card',
    );
    assert.deepEqual(
      run.atServer.map((m) => [m.params.name, m.params.arguments.path]),
      [
        ['delete_file', '/tmp/real'],
        ['delete_file', '/tmp/again'],
      ],
    );
  });

  test('a definition change drops the grant: after list_changed with a new description, the tool gets a card again', { timeout: TIMEOUT }, async () => {
    const run = await changingTool({
      args: ['--on-tool-change', 'off'],
      answers: [accept('session-tool'), accept()],
      script: async (client, change) => {
        await client.callTool({ name: 'read_file', arguments: { path: 'a' } });
        await client.callTool({ name: 'read_file', arguments: { path: 'b' } });
        await change();
        await client.callTool({ name: 'read_file', arguments: { path: 'c' } });
      },
    });
    assert.equal(run.handled.length, 2, 'a card before the grant, none for b, a card for c (the tool changed)');
    assert.match(run.handled[1].message, /^Arguments .*"c"/m);
    assert.deepEqual(argsAt(run, 'read_file'), [{ path: 'a' }, { path: 'b' }, { path: 'c' }]);
    assert.deepEqual(
      endsOf(run.logs, 'read_file').map((e) => e.decision.by),
      ['approval', 'grant', 'approval'],
    );
  });
});

describe('a grant never skips the pin hold', () => {
  test("a tool changed after its grant: the held change's card offers no scope (a scope answer is refused); accepting it once updates the pin, and the old grant is gone", {
    timeout: TIMEOUT,
  }, async () => {
    const run = await changingTool({
      answers: [accept('session-tool'), accept('session-tool'), accept(), { action: 'decline' }],
      script: async (client, change) => {
        const out = [];
        const read = async (path) => out.push(await client.callTool({ name: 'read_file', arguments: { path } }));
        await read('a');
        await read('b');
        await change();
        await read('c');
        await read('d');
        await read('e');
        return out;
      },
    });
    assert.equal(run.handled.length, 4, 'a card for a; none for b (the grant); the held change for c and d; a card for e');
    assert.ok(run.handled[0].requestedSchema.properties.scope, 'the policy card offers a scope');
    for (const held of run.handled.slice(1, 3)) {
      assert.match(held.message, /What changed since the tool was pinned/);
      assert.deepEqual(held.requestedSchema.properties, {}, "the held change's card offers no scope");
    }
    assert.doesNotMatch(run.handled[3].message, /What changed/);
    assert.match(run.result[2].content[0].text, /does not fit the card: it chose scope "session-tool", which the card did not offer \(it offered once\)/);
    assert.deepEqual(argsAt(run, 'read_file'), [{ path: 'a' }, { path: 'b' }, { path: 'd' }]);
    assert.deepEqual(
      endsOf(run.logs, 'read_file').map((e) => [e.state, e.decision.by]),
      [
        ['completed', 'approval'],
        ['completed', 'grant'],
        ['denied', 'approval'],
        ['completed', 'approval'],
        ['denied', 'approval'],
      ],
    );
  });
});

describe('SDK v2 client (2026-07-28): the scope travels in the retry', () => {
  const v2Server = (dirs) => [process.execPath, TEE, dirs.wire, '--', process.execPath, V2_SERVER, '--pid-dir', dirs.pids];
  const policy = { default: 'allow', rules: [{ tool: '*', decision: 'ask' }] };

  test('session-tool: the next call of the tool is answered by the server at once (no input_required); another tool still gets a card', {
    timeout: TIMEOUT,
  }, async () => {
    const run = await guarded({
      make: v2,
      policy,
      server: v2Server,
      sessions: 2,
      answers: [accept('session-tool'), { action: 'decline' }],
      script: async (client) => [
        await client.callTool({ name: 'echo', arguments: { text: 'one' } }),
        await client.callTool({ name: 'echo', arguments: { text: 'two' } }),
        await client.callTool({ name: 'slow', arguments: { ms: 1 } }),
      ],
    });
    assert.deepEqual(
      run.result.slice(0, 2).map((r) => r.content),
      [[{ type: 'text', text: 'one' }], [{ type: 'text', text: 'two' }]],
    );
    assert.equal(run.result[2].isError, true);
    assert.deepEqual(
      run.handled.map((h) => [h.key, /^Tool: (.*)$/m.exec(h.message)[1]]),
      [
        [APPROVAL_KEY, 'echo'],
        [APPROVAL_KEY, 'slow'],
      ],
    );
    assert.deepEqual(Object.keys(run.handled[0].requestedSchema.properties), ['scope']);
    assert.deepEqual(
      run.handled[0].requestedSchema.properties.scope.oneOf.map((o) => o.const),
      ['once', 'session-same-arguments', 'session-tool'],
    );
    assert.deepEqual(
      run.atServer.map((m) => m.params.arguments),
      [{ text: 'one' }, { text: 'two' }],
    );
    const ends = endsOf(run.logs, 'echo');
    assert.deepEqual(
      ends.map((e) => [e.state, e.decision.by]),
      [
        ['input_required', 'approval'],
        ['completed', 'approval'],
        ['completed', 'grant'],
      ],
      'the card, its retry, then the granted call in one request',
    );
    assert.equal(ends[1].decision.scope, 'session-tool');
    assert.equal(ends[2].decision.grant.call_id, ends[1].call_id);
    assert.equal(ends[2].decision.grant.channel, 'input_required');
  });
});

/**
 * read_file asked about by the policy, behind pins-server.py through an SDK v1 client; the script's `change()`
 * gives the tool a new description and resolves once the client has had list_changed.
 */
async function changingTool({ args = [], answers, script }) {
  const scratch = tempDir('mcpguard-grants-variant-');
  cleanups.push(scratch.cleanup);
  const variant = join(scratch.dir, 'variant');
  writeFileSync(variant, 'base');
  let changed;
  const listChanged = new Promise((resolve) => {
    changed = resolve;
  });
  const change = async () => {
    writeFileSync(variant, 'description');
    await listChanged;
  };
  return guarded({
    make: (params, answers) => {
      const peer = v1(params, answers);
      peer.client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
      return peer;
    },
    policy: { default: 'allow', rules: [{ tool: 'read_file', decision: 'ask' }] },
    server: () => ['python3', fixture('pins-server.py')],
    env: { PINS_VARIANT_FILE: variant, WATCH_VARIANT: '1' },
    args,
    answers,
    script: (client) => script(client, change),
  });
}
