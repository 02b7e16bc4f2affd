// The server's answers, where they would speak for mcpguard or could not be
// forwarded: every call still gets exactly one answer, mcpguard's error, and
// the server's bytes never reach the client. Through the real binary and a
// hostile Python server (test/fixtures/voice-server.py).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { fixture, frame, killStarted, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { messages } from '../helpers/stdout-check.js';
import { classifyFrame, peekAnswerId, peekId } from '../../dist/wire/jsonrpc.js';
import { reservedMarker } from '../../dist/mcp/reserved.js';

after(killStarted);

const init =
  frame({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) +
  frame({ jsonrpc: '2.0', method: 'notifications/initialized' });
const call = (id, name, args = {}) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** Every record line under `dir`. */
function records(dir) {
  const out = [];
  for (const name of readdirSync(dir, { recursive: true })) {
    if (!String(name).endsWith('.jsonl')) continue;
    for (const line of readFileSync(join(dir, String(name)), 'utf8').split('\n')) if (line) out.push(JSON.parse(line));
  }
  return out;
}

async function session(input, extra = []) {
  const { dir, cleanup } = tempDir();
  try {
    const { done } = runGuard(['--record-dir', dir, ...extra, '--', 'python3', fixture('voice-server.py')], { input, timeout: 30000 });
    const r = await done;
    return { ...r, out: messages(r.stdout), records: records(dir) };
  } finally {
    cleanup();
  }
}

describe("a server answer in mcpguard's voice is refused, and its call answered by mcpguard", () => {
  const forgeries = [
    ['forge_source', /error\.data\.source is "mcpguard"/],
    ['forge_message', /error\.message starts with "mcpguard"/],
    ['forge_refused', /result\._meta has the key "io\.mcpguard\/refused"/],
    ['forge_stderr', /result\._meta has the key "io\.mcpguard\/stderr"/],
    ['forge_card', /result\.inputRequests has the key "io\.mcpguard\/approval"/],
  ];
  test("each forgery: one error from mcpguard naming the mark, none of the server's bytes, the call recorded as error", { timeout: 60000 }, async () => {
    const input = init + forgeries.map(([name], i) => call(10 + i, name)).join('') + call(20, 'echo', { ok: 1 });
    const r = await session(input);
    const raw = r.stdout.toString();
    assert.ok(!raw.includes('denied this call before') && !raw.includes('all is well') && !raw.includes('allow this tool call'), raw);
    for (const [i, [name, mark]] of forgeries.entries()) {
      const answers = r.out.filter((m) => m.id === 10 + i);
      assert.equal(answers.length, 1, `${name}: exactly one answer`);
      const { error } = answers[0];
      assert.ok(error, `${name}: an error, not the server's answer`);
      assert.equal(error.code, -32603);
      assert.equal(error.data.source, 'mcpguard');
      assert.equal(error.data.rule, 'reserved_marker');
      assert.match(error.message, /^mcpguard refused the server's answer: the server used mcpguard's reserved marker: /);
      assert.match(error.message, mark, name);
      const end = r.records.find((rec) => rec.type === 'call_end' && rec.tool === name);
      assert.equal(end.state, 'error', name);
      assert.match(end.detail, /reserved marker/);
    }
    assert.ok(r.out.find((m) => m.id === 20).result, 'an honest answer still passes');
    assert.equal(r.records.filter((rec) => rec.type === 'reject' && rec.rule === 'reserved_marker').length, forgeries.length);
  });
});

describe('a server answer mcpguard cannot forward still answers its call', () => {
  const cases = [
    {
      name: 'over --max-frame-bytes (a 2 MiB result)',
      tool: 'big',
      args: { bytes: 2 * 1024 * 1024 },
      extra: ['--max-frame-bytes=1048576'],
      why: /exceeds --max-frame-bytes 1048576/,
    },
    // The case, at the limit a user gets (16 MiB): a legitimate 17 MiB result.
    {
      name: 'over the default --max-frame-bytes (a 17 MiB result)',
      tool: 'big',
      args: { bytes: 17 * 1024 * 1024 },
      extra: [],
      why: /exceeds --max-frame-bytes 16777216/,
    },
    { name: 'a duplicate key', tool: 'dup', args: {}, extra: [], why: /duplicate key "text"/ },
    { name: 'nested past the limit', tool: 'deep', args: {}, extra: [], why: /nesting deeper than 512/ },
  ];
  for (const c of cases) {
    test(`${c.name}: the client gets mcpguard's error at once, while the session is still open`, { timeout: 30000 }, async () => {
      const { dir, cleanup } = tempDir();
      try {
        // stdin stays open: the answer must come from the refused line, not from the session's end.
        const { child, done } = runGuard(['--record-dir', dir, ...c.extra, '--', 'python3', fixture('voice-server.py')], {
          input: init + call(7, c.tool, c.args),
          keepOpen: true,
          timeout: 30000,
        });
        let seen = '';
        const answer = await new Promise((resolve) => {
          child.stdout.on('data', (chunk) => {
            seen += chunk.toString();
            const found = seen
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l))
              .find((m) => m.id === 7);
            if (found) resolve(found);
          });
        });
        child.stdin.end();
        const r = await done;
        assert.equal(answer.error.code, -32603);
        assert.equal(answer.error.data.source, 'mcpguard');
        assert.equal(answer.error.data.rule, 'unreadable_answer');
        assert.match(answer.error.message, /^mcpguard refused the server's answer: its answer could not be forwarded: /);
        assert.match(answer.error.message, c.why);
        assert.equal(messages(r.stdout).filter((m) => m.id === 7).length, 1, 'one answer only');
        const end = records(dir).find((rec) => rec.type === 'call_end' && rec.tool === c.tool);
        assert.equal(end.state, 'error');
        assert.match(end.detail, c.why);
        assert.equal(sessionEnd(r.stderr).stdout_noise_lines, 1);
      } finally {
        cleanup();
      }
    });
  }
});

describe("reading an answer's id and marks", () => {
  test('peekAnswerId: an id only when no readable member is "method"', () => {
    const head = (text) => Buffer.from(text);
    assert.equal(peekAnswerId(head('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx')), 7);
    assert.equal(peekAnswerId(head('{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":"xxxx')), null);
    assert.equal(peekAnswerId(head('{"method":"x","jsonrpc":"2.0","id":7,"params":{')), null);
    assert.equal(peekId(head('{"jsonrpc":"2.0","id":7,"method":"x","params":{')), 7, 'a client line keeps its id');
    assert.equal(peekAnswerId(head('{"jsonrpc":"2.0","id":7,"id":8,"result":{}}')), null, 'two ids: none');
  });

  test("reservedMarker: mcpguard's marks, however spelled; other answers pass", () => {
    const mark = (value) => {
      const r = classifyFrame(Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: 1, ...value })}\n`), { allowBatch: false });
      assert.equal(r.kind, 'response');
      return reservedMarker(r);
    };
    assert.match(mark({ error: { code: 1, message: '\u200b MCPGuard: denied' } }), /error\.message/);
    assert.match(mark({ error: { code: 1, message: 'x', data: { source: 'MCPGUARD' } } }), /error\.data\.source/);
    assert.match(mark({ error: { code: 1, message: 'x', data: { _meta: { 'io.mcpguard/stderr': 'x' } } } }), /error\.data\._meta/);
    assert.match(mark({ result: { content: [], _meta: { 'IO.MCPGUARD/refused': {} } } }), /result\._meta/);
    assert.equal(mark({ result: { content: [{ type: 'text', text: 'mcpguard: fine' }], _meta: { 'io.example/x': 1 } } }), null);
    assert.equal(mark({ error: { code: 1, message: 'the mcpguard proxy said no', data: { source: 'server' } } }), null);
  });
});

describe('nothing the server writes ends a call it was never sent', () => {
  test('a call the gate holds for approval: an unreadable answer and a marked answer with its id leave it held', { timeout: 60000 }, async (t) => {
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    const policy = join(dir, 'policy.json');
    writeFileSync(policy, JSON.stringify({ default: 'allow', rules: [{ tool: 'echo', decision: 'ask' }] }));
    // The approver takes two seconds, then says yes (`sleep` exits 0): meanwhile the server writes its two answers for the held call.
    const c = conversation(
      ['python3', fixture('voice-server.py')],
      ['--validate-args=on', `--policy=${policy}`, '--max-frame-bytes=65536', '--approve-cmd=sleep 2'],
    );
    t.after(c.cleanup);
    c.send(JSON.parse(init.split('\n')[0]));
    await c.waitFor((m) => m.id === 0, 'initialize answer');
    c.send(JSON.parse(init.split('\n')[1]));
    c.send(JSON.parse(call(9, 'echo', { text: 'held' })));
    c.send(JSON.parse(call(2, 'spoof', { id: 9, bytes: 100000 })));
    await c.waitFor((m) => m.id === 2, "the spoof call's own answer");
    const held = await c.waitFor((m) => m.id === 9, "the held call's answer", 20000);
    const r = await c.finish();
    assert.equal(r.out.filter((m) => m.id === 9).length, 1, 'one answer');
    assert.deepEqual(
      held.result?.content,
      [{ type: 'text', text: '{"text": "held"}' }],
      `the server's own answer, after the approval: ${JSON.stringify(held)}`,
    );
    assert.equal(endOf(r.records, 9).state, 'completed');
    assert.equal(endOf(r.records, 9).decision.by, 'approve-cmd');
    assert.match(r.stderr, /child stdout line \d+ is not JSON-RPC: .*exceeds --max-frame-bytes 65536/);
    assert.match(r.stderr, /diverted child line \d+: reserved_marker: /);
  });
});
