// `mcpguard logs SESSION` prints the stderr that came outside any call where
// it came: before the first call, between calls, after the last, each stretch
// under its own header, each byte once. The server's writes are sequenced by
// the test (stepped-stderr.py writes when told, on its stdin), and each step
// waits until mcpguard has mirrored the line: the order is forced, not timed.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 30000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const step = { jsonrpc: '2.0', method: 'notifications/roots/list_changed' };
const call = (id, text) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'say', arguments: { text } } });
const logs = (recordDir, ...args) => runGuard(['logs', `--record-dir=${recordDir}`, ...args]).done;

/** A session on stepped-stderr.py: `script` is a list of steps, each 'outside' (a line outside any call) or a call's text. */
async function steppedSession(outside, script, args = []) {
  const c = conversation(['python3', fixture('stepped-stderr.py')], ['--validate-args=off', ...args], { OUTSIDE: outside.join('|') });
  let mirrored = '';
  c.child.stderr.on('data', (chunk) => {
    mirrored += chunk;
  });
  const mirror = async (text) => {
    for (let waited = 0; !mirrored.includes(text); waited += 20) {
      if (waited > 10000) assert.fail(`mcpguard never mirrored ${JSON.stringify(text)}; it wrote: ${mirrored}`);
      await sleep(20);
    }
  };
  try {
    let next = 0;
    let id = 0;
    for (const s of script) {
      if (s === 'outside') {
        c.send(step);
        await mirror(outside[next++]);
        continue;
      }
      c.send(call(++id, s));
      // The call's line is in mcpguard's hands while the call is in flight; only then is the answer let go.
      await mirror(s);
      c.send(step);
      const answered = id;
      await c.waitFor((m) => m.id === answered, `answer to ${answered}`);
    }
    const r = await c.finish();
    const sessionId = readdirSync(c.recordDir)
      .find((f) => f.endsWith('.jsonl'))
      .replace(/\.jsonl$/, '');
    return { ...r, recordDir: c.recordDir, sessionId, cleanup: c.cleanup };
  } catch (error) {
    c.cleanup();
    throw error;
  }
}

describe('logs SESSION: stderr outside any call in stream order', () => {
  test('before the first call, between two calls and after the last: each stretch where it came, under its own header', { timeout: TIMEOUT * 2 }, async (t) => {
    const outside = ['outside: starting', 'outside: between the calls', 'outside: after the last call'];
    const s = await steppedSession(outside, ['outside', 'call 1: working', 'outside', 'call 2: working', 'outside']);
    t.after(s.cleanup);
    const one = endOf(s.records, 1);
    const two = endOf(s.records, 2);
    assert.equal(one.stderr, 'call 1: working\n');
    assert.equal(two.stderr, 'call 2: working\n');
    // The record: the tail's text as before, and where each of its stretches lies in the stream.
    const end = s.records.find((r) => r.type === 'session_end').stderr;
    assert.equal(end.tail, `[captured stderr]\n${outside.join('\n')}\n`);
    const lengths = outside.map((l) => Buffer.byteLength(`${l}\n`));
    const c1 = Buffer.byteLength(one.stderr);
    assert.deepEqual(end.tail_stretches, [
      { start: 0, end: lengths[0], bytes: lengths[0] },
      { start: lengths[0] + c1, end: lengths[0] + c1 + lengths[1], bytes: lengths[1] },
      { start: two.stderr_stream_end, end: two.stderr_stream_end + lengths[2], bytes: lengths[2] },
    ]);
    assert.equal(one.stderr_stream_end, lengths[0] + c1);

    const r = await logs(s.recordDir, s.sessionId);
    assert.equal(r.code, 0, r.stderr);
    const tailHeader = (i) => `==> session ${s.sessionId}: stderr outside any call (${i} of 3) <==`;
    const lines = r.stdout.toString().split('\n');
    assert.deepEqual(
      lines.map((l) => l.replace(/^(==> call c_[0-9a-f]+ {2}tools\/call say {2}completed) .*$/, '$1')),
      [
        tailHeader(1),
        'server| outside: starting',
        `==> call ${one.call_id}  tools/call say  completed`,
        'server| call 1: working',
        tailHeader(2),
        'server| outside: between the calls',
        `==> call ${two.call_id}  tools/call say  completed`,
        'server| call 2: working',
        tailHeader(3),
        'server| outside: after the last call',
        '',
      ],
      r.stdout.toString(),
    );

    // --json: each stretch one session_tail object, in the same order, with where it came; the old fields kept.
    const json = (await logs(s.recordDir, s.sessionId, '--json')).stdout
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      json.map((b) => [b.kind, b.call_id, b.text, b.stretch?.index ?? null]),
      [
        ['session_tail', null, 'outside: starting\n', 1],
        ['call', one.call_id, 'call 1: working\n', null],
        ['session_tail', null, 'outside: between the calls\n', 2],
        ['call', two.call_id, 'call 2: working\n', null],
        ['session_tail', null, 'outside: after the last call\n', 3],
      ],
    );
    assert.deepEqual(json[2].stretch, {
      index: 2,
      count: 3,
      start: end.tail_stretches[1].start,
      end: end.tail_stretches[1].end,
      merged: false,
      omitted_before: 0,
    });
    assert.equal(json[2].stream_end, end.tail_stretches[1].end);
    assert.equal(json[0].bytes_seen, end.tail_bytes_seen, 'bytes_seen still counts the whole tail');

    // --tail 2: the last two lines, each under its header.
    const last = (await logs(s.recordDir, s.sessionId, '--tail', '2')).stdout.toString();
    assert.match(
      last,
      new RegExp(
        `^==> call ${two.call_id} [^\\n]*\\nserver\\| call 2: working\\n${tailHeader(3).replace(/[()]/g, '\\$&')}\\nserver\\| outside: after the last call\\n$`,
      ),
    );
  });
});

describe('logs SESSION: what a session record says about its tail', () => {
  const id = 's_20261130T000000Z_0badcafe';
  /** A session log with these calls (text, where their stderr ends) and this session record's stderr. */
  function writeLog(dir, calls, stderr) {
    const lines = [{ created_at: '2026-11-30T00:00:00.000Z', log_id: id, seq: 0, type: 'header' }];
    for (const [i, [text, end]] of calls.entries()) {
      lines.push({
        call_id: `c_00000000000${i}`,
        ended_at: '2026-11-30T00:00:01.000Z',
        method: 'tools/call',
        state: 'completed',
        stderr: text,
        stderr_bytes_retained: text.length,
        stderr_bytes_seen: text.length,
        stderr_stream_end: end,
        stderr_truncated: false,
        tool: 't',
        type: 'call_end',
      });
    }
    lines.push({ ended_at: '2026-11-30T00:00:02.000Z', stderr, type: 'session_end' });
    writeFileSync(join(dir, `${id}.jsonl`), `${lines.map((l, seq) => JSON.stringify({ ...l, seq })).join('\n')}\n`);
  }
  const call = (i, text) => `==> call c_00000000000${i}  tools/call t  completed  2026-11-30 00:00:01 UTC <==\n${text}`;
  const outside = (which) => `==> session ${id}: stderr outside any call${which} <==\n`;

  test('head+tail: the marker above the first stretch, the omission line above the stretch after it, in mcpguard voice', async (t) => {
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    const marker = '[stderr truncated: kept first 2 and last 2 of 6 bytes, omitted 2]';
    const omission = '[... 2 bytes omitted ...]\n';
    writeLog(
      dir,
      [
        ['A1\n', 5],
        ['B1\n', 10],
      ],
      {
        tail: `[captured stderr]\n${marker}\na\n${omission}c\n`,
        tail_bytes_seen: 6,
        tail_truncated: true,
        tail_stretches: [
          { start: 0, end: 2, bytes: 2 },
          { omitted: 2, bytes: omission.length },
          { start: 10, end: 12, bytes: 2 },
        ],
      },
    );
    const r = await logs(dir, id, '--utc');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout.toString(),
      `${outside(' (1 of 2)')}${marker}\nserver| a\n${call(0, 'server| A1\n')}${call(1, 'server| B1\n')}${outside(' (2 of 2)')}${omission}server| c\n`,
    );
  });

  test("a merged stretch says calls wrote between its lines; a server line shaped like mcpguard's stays the server's", async (t) => {
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    const forged = '[... 9 bytes omitted ...]\n';
    writeLog(dir, [['A1\n', 33]], {
      tail: `[captured stderr]\n${forged}c\n`,
      tail_bytes_seen: forged.length + 2,
      tail_truncated: false,
      tail_stretches: [
        { start: 0, end: 40, bytes: forged.length, merged: true },
        { start: 40, end: 42, bytes: 2 },
      ],
    });
    const r = await logs(dir, id, '--utc');
    assert.equal(
      r.stdout.toString(),
      `${outside(' (1 of 2; calls wrote between its lines)')}server| ${forged}${call(0, 'server| A1\n')}${outside(' (2 of 2)')}server| c\n`,
    );
  });

  test('entries that do not add up to the text, or none: the tail whole after the calls, as before', async (t) => {
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    for (const stretches of [[{ start: 0, end: 2, bytes: 3 }], [{ start: 0, end: 1, bytes: 1 }], undefined, null]) {
      writeLog(dir, [['A1\n', 5]], { tail: '[captured stderr]\na\n', tail_bytes_seen: 2, tail_truncated: false, tail_stretches: stretches });
      const r = await logs(dir, id, '--utc');
      assert.equal(r.stdout.toString(), `${call(0, 'server| A1\n')}${outside('  2026-11-30 00:00:02 UTC')}server| a\n`, JSON.stringify(stretches));
    }
  });
});
