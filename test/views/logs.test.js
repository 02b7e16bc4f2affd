// What the server wrote on stderr, kept in the records and shown by
// `mcpguard logs`: a call's retained text in its final record with the
// excerpt's truncation marker, the session tail in the session record, secrets
// masked in both and in what `logs` prints.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fixture, killStarted, PLANTED_ENV, PLANTED_SHAPES, ROOT, runCommand, runGuard, tempDir } from '../helpers/run.js';
import { callEnds, conversation, endOf } from '../helpers/conversation.js';
import { serverText as srv } from '../../dist/mask/diagnostics.js';

after(killStarted);

const TIMEOUT = 30000;
const call = (id, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'stderr', arguments: args } });
/** Exactly what recorder.py writes for `bytes` bytes of `text` repeated. */
const written = (text, bytes) =>
  Buffer.from(text.repeat(bytes + 1))
    .subarray(0, bytes)
    .toString('utf8');

// src/cli/main.ts does not route `logs` to the record commands yet (that line is
// the CLI's to add); until it does, the same compiled dispatch is run in its
// own process. Once it does, set VIA_CLI and every run goes through bin/mcpguard.js.
const VIA_CLI = true;
const DISPATCH =
  `const m = await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'views', 'commands.js')).href)});` +
  "process.exitCode = await m.runRecordsCommand('logs', process.argv.slice(1));";
function logsRun(recordDir, args, options) {
  const argv = [`--record-dir=${recordDir}`, ...args];
  return VIA_CLI ? runGuard(['logs', ...argv], options) : runCommand(process.execPath, ['--input-type=module', '-e', DISPATCH, '--', ...argv], options);
}
const logs = (recordDir, ...args) => logsRun(recordDir, args).done;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const vmHWM = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

/** A session on recorder.py (started by `sh`, which says one line first), calls made one at a time. recorder.py never lists its tools, and this file is about logs, not the gate: the gate is off here, by name. */
async function noisySession(args, calls, env = {}) {
  const c = conversation(
    ['sh', '-c', `echo "server starting" >&2; exec python3 ${fixture('recorder.py')}`],
    ['--stderr-passthrough=off', '--validate-args=off', ...args],
    env,
  );
  try {
    for (const [id, a] of calls) {
      c.send(call(id, a));
      await c.waitFor((m) => m.id === id, `answer to ${id}`);
    }
    const r = await c.finish();
    const file = readdirSync(c.recordDir).find((f) => f.endsWith('.jsonl'));
    return { ...r, recordDir: c.recordDir, file: join(c.recordDir, file), sessionId: file.replace(/\.jsonl$/, ''), cleanup: c.cleanup };
  } catch (error) {
    c.cleanup();
    throw error;
  }
}

describe('stderr text in the records and in mcpguard logs', () => {
  test("a noisy session: each call's retained text and marker in its record, and logs shows exactly that", { timeout: TIMEOUT * 2 }, async (t) => {
    const noise = 'line of noise 0123456789 abcdefghijklmnopqrstuvwxyz\n';
    const s = await noisySession(
      ['--stderr-call-bytes=4096'],
      [
        [1, { bytes: 20000, text: noise, writes: 4, pause_ms: 20 }],
        [2, { bytes: 30, text: 'ab\n', is_error: true }],
        [3, { bytes: 0 }],
      ],
    );
    t.after(s.cleanup);
    // The record: one line per event, the text marked as the excerpt marks it.
    const lines = readFileSync(s.file, 'utf8').split('\n').filter(Boolean);
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line));
    const one = endOf(s.records, 1);
    const kept = written(noise, 20000).slice(-4096);
    const marker = '[stderr truncated: kept last 4096 of 20000 bytes]';
    assert.equal(one.stderr, `${marker}\n${kept}`);
    assert.deepEqual([one.stderr_bytes_seen, one.stderr_bytes_retained, one.stderr_truncated], [20000, 4096, true]);
    assert.ok(
      Buffer.byteLength(lines.find((l) => l.includes(one.call_id) && l.includes('"call_end"'))) < 4096 + 2048,
      'the record is bounded by --stderr-call-bytes',
    );
    const two = endOf(s.records, 2);
    assert.equal(two.stderr, written('ab\n', 30), 'nothing lost: no marker');
    assert.equal(two.stderr_truncated, false);
    assert.equal(endOf(s.records, 3).stderr, null, 'a call that wrote nothing has no text');
    const end = s.records.find((r) => r.type === 'session_end');
    assert.equal(end.stderr.tail, '[captured stderr]\nserver starting\n');
    assert.deepEqual([end.stderr.tail_truncated, end.stderr.tail_bytes_seen, end.stderr.truncated], [false, 'server starting\n'.length, true]);

    // logs CALL (a unique prefix): the text alone, marker first; a last line cut mid-way gets its newline.
    assert.ok(!kept.endsWith('\n'));
    const shown = `${kept}\n`;
    const byCall = await logs(s.recordDir, one.call_id.slice(0, 9));
    assert.equal(byCall.code, 0, byCall.stderr);
    assert.equal(byCall.stdout.toString(), `${marker}\n${srv(shown)}`, "the server's lines behind the prefix, the marker bare");
    const tail = await logs(s.recordDir, one.call_id, '--tail', '2');
    assert.equal(tail.stdout.toString(), `${marker}\n${srv(shown.split('\n').slice(-3).join('\n'))}`, 'the marker stays; then the last 2 lines');

    // logs SESSION (a unique prefix): each block where it came in the stream: the tail (the banner, before any call), then every call with stderr under a header.
    const bySession = await logs(s.recordDir, s.sessionId.slice(0, 12));
    assert.equal(bySession.code, 0, bySession.stderr);
    const text = bySession.stdout.toString();
    const headers = text.split('\n').filter((l) => l.startsWith('==> '));
    assert.equal(headers.length, 3, text.slice(0, 400));
    assert.equal(headers[0], `==> session ${s.sessionId}: stderr outside any call <==`);
    assert.match(headers[1], new RegExp(`^==> call ${one.call_id}  tools/call stderr  completed  `));
    assert.match(headers[2], new RegExp(`^==> call ${two.call_id}  tools/call stderr  tool_error  `));
    assert.equal(text, `${headers[0]}\nserver| server starting\n${headers[1]}\n${marker}\n${srv(shown)}${headers[2]}\n${srv(written('ab\n', 30))}`);

    // --json: one object per block, the marker apart from the text.
    const json = await logs(s.recordDir, s.sessionId, '--json');
    const blocks = json.stdout
      .toString()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      blocks.map((b) => [b.kind, b.call_id, b.marker, b.text]),
      [
        ['session_tail', null, null, 'server starting\n'],
        ['call', one.call_id, marker, kept],
        ['call', two.call_id, null, written('ab\n', 30)],
      ],
    );
  });

  test('a server that dies in a call: its last words are in the record of the call it cut off', { timeout: TIMEOUT }, async (t) => {
    const c = conversation(['sh', '-c', 'read line; echo "fatal: cannot open the database" >&2; exit 3'], ['--stderr-passthrough=off', '--validate-args=off']);
    t.after(c.cleanup);
    c.send(call(1, {}));
    await c.waitFor((m) => m.id === 1, 'answer to 1');
    const r = await c.finish();
    const one = endOf(r.records, 1);
    assert.equal(one.state, 'unknown_after_dispatch');
    assert.equal(one.stderr, 'fatal: cannot open the database\n');
    const out = await logs(c.recordDir, one.call_id);
    assert.equal(out.stdout.toString(), 'server| fatal: cannot open the database\n');
  });

  test('head+tail retention: the record and logs keep both ends and the omission line', { timeout: TIMEOUT }, async (t) => {
    const s = await noisySession(['--stderr-call-bytes=1000', '--stderr-retain=head+tail'], [[1, { bytes: 5000, text: '0123456789abcdefghi\n' }]]);
    t.after(s.cleanup);
    const all = written('0123456789abcdefghi\n', 5000);
    const expected = `[stderr truncated: kept first 500 and last 500 of 5000 bytes, omitted 4000]\n${all.slice(0, 500)}[... 4000 bytes omitted ...]\n${all.slice(-500)}`;
    assert.equal(endOf(s.records, 1).stderr, expected);
    const out = await logs(s.recordDir, endOf(s.records, 1).call_id);
    // The marker and the omission line are mcpguard's, bare; the server's lines come after the prefix.
    const shown = `[stderr truncated: kept first 500 and last 500 of 5000 bytes, omitted 4000]\n${srv(all.slice(0, 500))}[... 4000 bytes omitted ...]\n${srv(all.slice(-500))}`;
    assert.equal(out.stdout.toString(), shown.endsWith('\n') ? shown : `${shown}\n`);
  });

  test('secrets the server prints are masked in the call record, the session record and logs', { timeout: TIMEOUT }, async (t) => {
    const token = PLANTED_ENV.MCPGUARD_TEST_API_TOKEN;
    const shape = PLANTED_SHAPES.MCPGUARD_TEST_SHAPE_GITHUB.value;
    const line = `auth ${token} via ${shape} ok\n`;
    // Written in many small pieces, so a secret is split across writes; the sh banner puts one in the session tail too.
    const c = conversation(
      ['sh', '-c', `echo "boot with $MCPGUARD_TEST_API_TOKEN" >&2; exec python3 ${fixture('recorder.py')}`],
      ['--stderr-passthrough=off', '--validate-args=off'],
    );
    t.after(c.cleanup);
    c.send(call(1, { bytes: line.length * 3, text: line, writes: 9, pause_ms: 10 }));
    await c.waitFor((m) => m.id === 1, 'answer to 1');
    const r = await c.finish(); // runGuard scans every record for planted secrets
    const one = endOf(r.records, 1);
    assert.equal(one.stderr, `auth [REDACTED:MCPGUARD_TEST_API_TOKEN] via ghp_[REDACTED] ok\n`.repeat(3));
    assert.equal(r.records.find((x) => x.type === 'session_end').stderr.tail, '[captured stderr]\nboot with [REDACTED:MCPGUARD_TEST_API_TOKEN]\n');
    const out = await logs(c.recordDir, one.session_id); // runCommand scans what logs prints
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout.toString(), /auth \[REDACTED:MCPGUARD_TEST_API_TOKEN\] via ghp_\[REDACTED\] ok\n/);
    // The banner came before the call: its stretch of the tail is printed first.
    assert.match(out.stdout.toString(), /^==> session [^\n]*: stderr outside any call <==\nserver\| boot with \[REDACTED:MCPGUARD_TEST_API_TOKEN\]\n==> call /);
  });

  test('logs refuses what it cannot name: nothing matches, an ambiguous prefix, a bad --tail', { timeout: TIMEOUT }, async (t) => {
    const s = await noisySession(
      [],
      [
        [1, { bytes: 10 }],
        [2, { bytes: 10 }],
      ],
    );
    t.after(s.cleanup);
    // Every byte is in some record: the summary does not call the stderr truncated.
    const end = s.records.find((r) => r.type === 'session_end');
    assert.deepEqual([end.stderr.bytes_seen, end.stderr.truncated, end.stderr.tail_truncated], [10 + 10 + 'server starting\n'.length, false, false]);
    const none = await logs(s.recordDir, 'c_ffffffffffff0');
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no session or call 'c_ffffffffffff0'/);
    const ambiguous = await logs(s.recordDir, 'c_');
    assert.equal(ambiguous.code, 1);
    assert.match(ambiguous.stderr, /'c_' matches 2 sessions and calls/);
    const bad = await logs(s.recordDir, s.sessionId, '--tail', 'ten');
    assert.equal(bad.code, 125);
    assert.match(bad.stderr, /--tail expects a whole number of lines, got 'ten'/);
    const missing = await logs(s.recordDir);
    assert.equal(missing.code, 125);
  });
});

describe('a large session', () => {
  /** A session log of `calls` final records with `bytes` of stderr each (logs reads records; it does not verify the chain). */
  function bigLog(dir, calls, bytes) {
    const id = 's_20261130T000000Z_0badcafe';
    const text = 'a line the server wrote 0123456789\n'.repeat(Math.ceil(bytes / 35)).slice(0, bytes);
    const lines = [JSON.stringify({ created_at: '2026-11-30T00:00:00.000Z', log_id: id, seq: 0, type: 'header' })];
    for (let i = 0; i < calls; i++) {
      lines.push(
        JSON.stringify({
          call_id: `c_${i.toString(16).padStart(12, '0')}`,
          ended_at: '2026-11-30T00:00:01.000Z',
          method: 'tools/call',
          seq: i + 1,
          state: 'completed',
          stderr: text,
          stderr_bytes_retained: bytes,
          stderr_bytes_seen: bytes,
          stderr_truncated: false,
          tool: 't',
          type: 'call_end',
        }),
      );
    }
    lines.push(
      JSON.stringify({ seq: calls + 1, stderr: { tail: '[captured stderr]\nbye\n', tail_bytes_seen: 4, tail_truncated: false }, type: 'session_end' }),
    );
    writeFileSync(join(dir, `${id}.jsonl`), `${lines.join('\n')}\n`);
    // What logs prints for it: a header and the text per call, then the tail.
    const header = (i) => `==> call c_${i.toString(16).padStart(12, '0')}  tools/call t  completed  2026-11-30 00:00:01 UTC <==\n`;
    let expected = 0;
    for (let i = 0; i < calls; i++) expected += header(i).length + srv(text).length + (text.endsWith('\n') ? 0 : 1);
    expected += `==> session ${id}: stderr outside any call <==\nserver| bye\n`.length;
    return { id, expected };
  }

  test('a slow reader gets every byte; memory stays flat; a reader that goes away ends it with 0', { timeout: TIMEOUT * 4 }, async (t) => {
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    const { id, expected } = bigLog(dir, 40000, 2000); // a ~90 MB log
    const g = logsRun(dir, [id, '--utc'], { timeout: TIMEOUT * 3 });
    g.child.stdout.pause();
    let hwm = 0;
    const sample = setInterval(() => {
      try {
        hwm = Math.max(hwm, vmHWM(g.child.pid));
      } catch {}
    }, 50);
    t.after(() => clearInterval(sample));
    // Slow at first: the pipe is full and logs must wait, not queue what it read.
    await sleep(1000);
    g.child.stdout.resume();
    const r = await g.done;
    clearInterval(sample);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.length, expected, 'every byte');
    assert.ok(hwm < 100 * 1024 * 1024, `peak RSS ${hwm}`);
    t.diagnostic(`logs of a ${expected}-byte output: peak RSS (VmHWM) ${(hwm / 1048576).toFixed(1)} MiB`);

    const early = logsRun(dir, [id, '--json'], { timeout: TIMEOUT });
    await new Promise((resolve) => early.child.stdout.once('data', resolve));
    early.child.stdout.destroy();
    const stopped = await early.done;
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.equal(stopped.stderr, '');
  });
});

describe('logs --follow', () => {
  test('a live session: blocks appear as calls end, the tail when the session ends, then it exits 0', { timeout: TIMEOUT * 2 }, async (t) => {
    const c = conversation(
      ['sh', '-c', `echo "server starting" >&2; exec python3 ${fixture('recorder.py')}`],
      ['--stderr-passthrough=off', '--validate-args=off'],
    );
    t.after(c.cleanup);
    c.send(call(1, { bytes: 11, text: 'first call\n' }));
    await c.waitFor((m) => m.id === 1, 'answer to 1');
    let file;
    for (let waited = 0; file === undefined && waited < 10000; waited += 50) {
      file = existsSync(c.recordDir) ? readdirSync(c.recordDir).find((f) => f.endsWith('.jsonl')) : undefined;
      if (file === undefined) await sleep(50);
    }
    const follower = logsRun(c.recordDir, ['--follow', file.replace(/\.jsonl$/, '')], { timeout: TIMEOUT });
    let seen = '';
    follower.child.stdout.on('data', (chunk) => {
      seen += chunk;
    });
    const until = async (what, ok) => {
      for (let waited = 0; !ok(); waited += 50) {
        if (waited > 15000) assert.fail(`logs --follow never showed ${what}; it showed: ${seen}`);
        await sleep(50);
      }
    };
    await until('the first call', () => seen.includes('first call\n'));
    assert.equal(follower.child.exitCode, null, 'still following a live session');
    c.send(call(2, { bytes: 12, text: 'second call\n' }));
    await c.waitFor((m) => m.id === 2, 'answer to 2');
    await until('the second call', () => seen.includes('second call\n'));
    assert.equal(follower.child.exitCode, null);
    await c.finish();
    const r = await follower.done;
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout.toString();
    assert.deepEqual(
      out.split('\n').filter((l) => !l.startsWith('==> ')),
      ['server| first call', 'server| second call', 'server| server starting', ''],
    );
    assert.match(out, /==> session [^\n]*: stderr outside any call[^\n]*<==\nserver\| server starting\n$/);
  });

  test('a call still running: logs says so (exit 1); --follow waits for its final record', { timeout: TIMEOUT * 2 }, async (t) => {
    const c = conversation(['python3', fixture('recorder.py')], ['--stderr-passthrough=off', '--validate-args=off']);
    t.after(c.cleanup);
    c.send(call(1, { bytes: 30, text: 'slow call\n', writes: 3, pause_ms: 1500 }));
    let callId;
    for (let waited = 0; callId === undefined && waited < 10000; waited += 50) {
      const file = existsSync(c.recordDir) ? readdirSync(c.recordDir).find((f) => f.endsWith('.jsonl')) : undefined;
      const text = file === undefined ? '' : readFileSync(join(c.recordDir, file), 'utf8');
      callId = /"call_attempt"/.test(text) ? /"call_id":"(c_[0-9a-f]+)"/.exec(text)?.[1] : undefined;
      if (callId === undefined) await sleep(50);
    }
    const now = await logs(c.recordDir, callId);
    assert.equal(now.code, 1);
    assert.match(now.stderr, /has no final record yet/);
    const follower = await logsRun(c.recordDir, ['-f', callId], { timeout: TIMEOUT }).done;
    assert.equal(follower.code, 0, follower.stderr);
    assert.equal(follower.stdout.toString(), 'server| slow call\n'.repeat(3));
    await c.waitFor((m) => m.id === 1, 'answer to 1');
    await c.finish();
  });
});

describe('tool errors are their own outcome', () => {
  test("isError: true is tool_error, a JSON-RPC error stays error, the gate's refusals keep rejected and denied", { timeout: TIMEOUT * 2 }, async (t) => {
    const { dir, cleanup } = (await import('../helpers/run.js')).tempDir();
    t.after(cleanup);
    const policy = join(dir, 'policy.json');
    (await import('node:fs')).writeFileSync(policy, JSON.stringify({ rules: [{ tool: 'record', decision: 'deny', reason: 'not here' }] }));
    const c = conversation(['python3', fixture('recorder.py')], ['--stderr-passthrough=off', '--validate-args=off', `--policy=${policy}`]);
    t.after(c.cleanup);
    c.send(call(1, { bytes: 5, is_error: true }));
    c.send(call(2, { bytes: 5, rpc_error: true }));
    c.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'record', arguments: {} } });
    c.send(call(4, { bytes: 5 }));
    for (const id of [1, 2, 3, 4]) await c.waitFor((m) => m.id === id, `answer to ${id}`);
    const answers = new Map(c.out().map((m) => [m.id, m]));
    assert.equal(answers.get(3).result.isError, true, 'the denial is a tool error on the wire');
    assert.equal(answers.get(3).result._meta['io.mcpguard/refused'].state, 'denied');
    const r = await c.finish();
    assert.deepEqual(
      [1, 2, 3, 4].map((id) => endOf(r.records, id).state),
      ['tool_error', 'error', 'denied', 'completed'],
    );
    assert.equal(endOf(r.records, 1).detail, 'the tool reported an error (result isError: true)');
    assert.deepEqual(r.summary.calls, { tool_error: 1, error: 1, denied: 1, completed: 1 });
    assert.deepEqual(r.records.find((x) => x.type === 'session_end').calls, r.summary.calls);
  });

  test('arguments the gate refuses (an isError answer from mcpguard) stay rejected', { timeout: TIMEOUT }, async (t) => {
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on']);
    t.after(c.cleanup);
    c.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    await c.waitFor((m) => m.id === 'init', 'initialize answer');
    c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    c.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 5 } } });
    const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
    assert.equal(one.result.isError, true);
    assert.equal(one.result._meta['io.mcpguard/refused'].state, 'rejected');
    const r = await c.finish();
    assert.equal(endOf(r.records, 1).state, 'rejected');
    assert.equal(r.summary.calls.tool_error, undefined);
    assert.equal(callEnds(r.records).filter((x) => x.state === 'tool_error').length, 0);
  });
});

describe("lines the server wrote to look like mcpguard's", () => {
  /** A session log of one call whose record keeps `stderr` (logs reads records; it does not verify the chain). */
  function oneCallLog(dir, stderr, truncated) {
    const id = 's_20261202T000000Z_0c0ffee0';
    const lines = [
      { created_at: '2026-12-02T00:00:00.000Z', log_id: id, seq: 0, type: 'header' },
      {
        call_id: 'c_00000000beef',
        ended_at: '2026-12-02T00:00:01.000Z',
        method: 'tools/call',
        seq: 1,
        state: 'completed',
        stderr,
        stderr_bytes_retained: 10,
        stderr_bytes_seen: 5000,
        stderr_truncated: truncated,
        tool: 't',
        type: 'call_end',
      },
    ];
    writeFileSync(join(dir, `${id}.jsonl`), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    return id;
  }
  const marker = '[stderr truncated: kept first 6 and last 5 of 5000 bytes, omitted 4989]';
  const omission = '[... 4989 bytes omitted ...]';

  test("headers, markers and the omission line are bare only when they are mcpguard's", { timeout: TIMEOUT }, async (t) => {
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    // The server wrote a header and an omission line of another count: mcpguard's one omission line stays bare.
    const id = oneCallLog(dir, `${marker}\nfirst\n==> call c_fake  tools/call t  completed <==\n${omission}\n[... 7 bytes omitted ...]\nlast\n`, true);
    const out = (await logs(dir, id, '--utc')).stdout.toString().split('\n');
    assert.deepEqual(out, [
      '==> call c_00000000beef  tools/call t  completed  2026-12-02 00:00:01 UTC <==',
      marker,
      'server| first',
      'server| ==> call c_fake  tools/call t  completed <==',
      omission,
      'server| [... 7 bytes omitted ...]',
      'server| last',
      '',
    ]);
    // A copy of the very line: neither is taken for mcpguard's (the marker above still says what was omitted).
    const twice = oneCallLog(dir, `${marker}\n${omission}\nfirst\n${omission}\nlast\n`, true);
    const shown = (await logs(dir, twice, '--utc')).stdout.toString();
    assert.ok(!shown.split('\n').includes(omission), shown);
    // Without bytes lost, a marker-shaped first line is the server's.
    const forged = oneCallLog(dir, `${marker}\nhello\n`, false);
    assert.match((await logs(dir, forged, '--utc')).stdout.toString(), /^==> [^\n]*\nserver\| \[stderr truncated: /);
  });
});

describe('logs SESSION with calls in flight together', () => {
  test('the README hang walkthrough: each stderr line once, in order, headers naming the calls open together; logs CALL keeps its own', {
    timeout: TIMEOUT * 2,
  }, async (t) => {
    // The walkthrough's input, sent once mcpguard has mirrored the server's banner: the banner then came with no call in
    // flight (the session tail), the way a loaded machine once ordered it, and it must still be printed first. Which call
    // a line came in depends on the two pipes' timing; the order printed must not.
    const c = conversation(['python3', join(ROOT, 'examples', 'hanging-server.py')], ['--call-timeout', '2s']);
    t.after(c.cleanup);
    let mirrored = '';
    c.child.stderr.on('data', (chunk) => {
      mirrored += chunk;
    });
    for (let waited = 0; !mirrored.includes('hanging-server: starting'); waited += 20) {
      if (waited > 10000) assert.fail(`no banner mirrored: ${mirrored}`);
      await sleep(20);
    }
    c.child.stdin.write(readFileSync(join(ROOT, 'examples', 'hang.jsonl')));
    await c.waitFor((m) => m.id === 4, 'the hung call timed out', TIMEOUT / 2);
    await c.waitFor((m) => m.id === 5, 'answer to 5');
    await c.finish();
    const dir = c.recordDir;
    const r = await logs(dir, 'last');
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout.toString();
    const lines = out.split('\n').filter((l) => l.startsWith('server| '));
    assert.deepEqual(
      lines,
      [
        'server| hanging-server: starting',
        'server| lookup: connecting to db-1:5432',
        'server| lookup: orders found',
        'server| lookup: connecting to db-2:5432',
        'server| lookup: connect() to db-2:5432 is taking long, retrying',
        'server| delete: permission denied for orders',
      ],
      out,
    );
    const ends = readFileSync(
      join(
        dir,
        readdirSync(dir).find((f) => f.endsWith('.jsonl')),
      ),
      'utf8',
    )
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((x) => x.type === 'call_end');
    const hung = ends.find((x) => x.state === 'timed_out_after_dispatch');
    assert.equal(typeof hung.stderr_stream_end, 'number');
    assert.match(out, new RegExp(`==> call ${hung.call_id}  tools/call lookup  timed_out_after_dispatch  .*\\(with c_`));
    // The call's own view is unchanged: all it saw, whoever else saw it too.
    const own = (await logs(dir, hung.call_id)).stdout.toString();
    assert.match(own, /server\| lookup: connect\(\) to db-2:5432 is taking long, retrying/);
    assert.equal(own.split('\n').filter((l) => l.startsWith('server| ')).length, hung.stderr.split('\n').filter(Boolean).length);
  });
});

describe('logs SESSION with calls in flight together, one of them cut to --stderr-call-bytes', () => {
  test('the shared bytes once, under the call that started first with its marker; the later call only what is its own', { timeout: TIMEOUT * 2 }, async (t) => {
    const noise = 'line of noise 0123456789 abcdefghijklmnopqrstuvwxyz\n';
    const c = conversation(['python3', fixture('recorder.py')], ['--stderr-passthrough=off', '--validate-args=off', '--stderr-call-bytes=4096'], {});
    t.after(c.cleanup);
    // Both sent at once: the server answers one at a time, so call 2 is in flight for all of call 1's stderr too.
    c.send(call(1, { bytes: 20000, text: noise, writes: 4, pause_ms: 20 }));
    c.send(call(2, { bytes: 30, text: 'ab\n' }));
    await c.waitFor((m) => m.id === 2, 'answer to 2');
    await c.finish();
    const out = (await logs(c.recordDir, 'last')).stdout.toString();
    const lines = out.split('\n');
    const kept = written(noise, 20000).slice(-4096);
    assert.equal(lines.filter((l) => l === 'server| ab').length, 10, out.slice(-600));
    assert.equal(out.split(srv(kept)).length - 1, 1, 'the kept noise once');
    assert.ok(lines.includes('[stderr truncated: kept last 4096 of 20000 bytes]'));
    const headers = lines.filter((l) => l.startsWith('==> call '));
    assert.equal(headers.length, 2);
    // Stdout and stderr are two pipes: call 1's answer may be read after the server wrote call 2's first stderr, and
    // then those bytes were seen while call 1 was still open too (shown once, under call 1; call 2 says all were above).
    const marker = lines[lines.indexOf(headers[1]) + 1];
    assert.match(marker, /^\[\d+ bytes shown above(, all of this call's)?\]$/);
    if (!marker.endsWith("all of this call's]")) assert.ok(out.indexOf('server| ab') > out.indexOf(headers[1]), "call 2's own bytes under its header");
  });
});
