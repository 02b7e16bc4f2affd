// The seed's cases, each through the real mcpguard binary and a real child that
// records every line it receives and every tools/call it executes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { fixture, frame, killStarted, readLines, runGuard, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';
import { assertProtocolStdout, messages } from '../helpers/stdout-check.js';

after(killStarted);

const call = (id, name, args = {}) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** Run mcpguard in front of the recorder; returns what the client and the child saw. */
async function throughGuard(input, { mode = 'close', env = {}, extra = [] } = {}) {
  const { dir, cleanup } = tempDir();
  try {
    const lines = join(dir, 'lines');
    const actions = join(dir, 'actions');
    const { done } = runGuardUngated([`--on-invalid=${mode}`, ...extra, '--', 'python3', fixture('recorder.py')], {
      input,
      env: { RECORD_LINES: lines, RECORD_ACTIONS: actions, ...env },
    });
    const result = await done;
    return { ...result, childLines: readLines(lines), actions: readLines(actions) };
  } finally {
    cleanup();
  }
}

const BAD_CASES = [
  { name: 'a debug line before a valid request', bad: 'debug: entering tool handler\n', code: -32700, id: null },
  {
    name: 'a valid request followed by a banner on the same line',
    bad: call(1, 'glued-banner').trimEnd() + 'loading optional extension\n',
    code: -32700,
    id: 1,
  },
  { name: 'two objects glued on one line', bad: call(2, 'glued-a').trimEnd() + call(3, 'glued-b'), code: -32700, id: 2 },
  { name: 'a plausible tools/call with string params', bad: frame({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: 'run' }), code: -32602, id: 4 },
  { name: 'id: true', bad: frame({ jsonrpc: '2.0', id: true, method: 'tools/call', params: { name: 'bool-id' } }), code: -32600, id: null },
  { name: 'jsonrpc "1.0"', bad: frame({ jsonrpc: '1.0', id: 5, method: 'tools/call', params: { name: 'old-version' } }), code: -32600, id: 5 },
  { name: 'duplicate "method" keys', bad: '{"jsonrpc":"2.0","id":6,"method":"ping","method":"tools/call","params":{"name":"dup"}}\n', code: -32700, id: 6 },
  { name: 'a duplicate key spelled with an escape', bad: '{"jsonrpc":"2.0","id":7,"method":"ping","\\u006dethod":"tools/call"}\n', code: -32700, id: 7 },
  {
    name: 'invalid UTF-8',
    bad: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}}\n')]),
    code: -32700,
    id: 8,
  },
  { name: 'NaN inside params', bad: '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"nan","arguments":{"x":NaN}}}\n', code: -32700, id: 9 },
  { name: 'a fractional id', bad: '{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"frac"}}\n', code: -32600, id: 1.5 },
  { name: 'a batch when batches are off', bad: `[${call(10, 'batched').trimEnd()}]\n`, code: -32600, id: null },
];

describe('client → child: every seed case is rejected before it reaches the child', () => {
  for (const c of BAD_CASES) {
    test(`${c.name} (close mode: the next valid request executes nothing)`, { timeout: 30000 }, async () => {
      const input = Buffer.concat([Buffer.from(c.bad), Buffer.from(call(100, 'after-close', { v: 'green' }))]);
      const r = await throughGuard(input);
      assert.deepEqual(r.childLines, [], 'nothing reached the child');
      assert.deepEqual(r.actions, [], 'no action executed');
      const out = messages(r.stdout);
      assert.equal(out[0].error.code, c.code);
      assert.deepEqual(out[0].id, c.id);
      assert.match(out[0].error.message, /^mcpguard rejected the frame: /);
      // The request after the close is answered with an error, never executed.
      assert.equal(out.length, 2);
      assert.equal(out[1].id, 100);
      assert.equal(out[1].error.code, -32000);
      assert.match(r.stderr, /mcpguard: rejected client line 1: /);
      assert.equal(sessionEnd(r.stderr).end_reason, 'invalid_client_frame');
    });
  }

  test('truncated JSON then EOF is answered and never forwarded', { timeout: 30000 }, async () => {
    const r = await throughGuard('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trunc"');
    assert.deepEqual(r.childLines, []);
    assert.deepEqual(r.actions, []);
    const out = messages(r.stdout);
    assert.equal(out.length, 1);
    assert.equal(out[0].error.code, -32700);
    assert.equal(out[0].id, 1, 'the id could be read from the line, so the answer carries it');
    assert.match(out[0].error.message, /incomplete line at end of input/);
  });

  test('reject mode: the next valid request runs normally and inherits nothing', { timeout: 30000 }, async () => {
    const input =
      frame({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: 'run', extra: 1 }) +
      frame({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'record', arguments: { v: 'green' } } });
    const r = await throughGuard(input, { mode: 'reject' });
    const out = messages(r.stdout);
    assert.equal(out.length, 2);
    assert.equal(out[0].id, 5);
    assert.equal(out[0].error.code, -32600);
    assert.deepEqual(out[1], { jsonrpc: '2.0', id: 5, result: { content: [{ type: 'text', text: '{"v": "green"}' }] } });
    assert.deepEqual(r.actions, ['{"arguments": {"v": "green"}, "name": "record"}']);
    assert.equal(r.childLines.length, 1, 'only the valid frame reached the child');
  });

  test('the child receives the original bytes, not a re-serialisation', { timeout: 30000 }, async () => {
    const original = '{ "params" : {"name":"record","arguments":{"s":"caf\\u00e9 é"}}, "method":"tools/call", "id":"a-1" ,"jsonrpc":"2.0" }';
    const r = await throughGuard(`${original}\n`);
    assert.deepEqual(r.childLines, [original]);
    assert.equal(messages(r.stdout)[0].id, 'a-1');
  });

  test('an id still in flight may not be reused', { timeout: 30000 }, async () => {
    const input = frame({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'slow' } }) + call(1, 'reused');
    const r = await throughGuard(input, { mode: 'reject', env: { SLOW_TOOL_MS: '300' } });
    const out = messages(r.stdout);
    const rejected = out.find((m) => m.error);
    assert.equal(rejected.id, null, 'the error must not be paired with the request in flight');
    assert.match(rejected.error.message, /already in flight/);
    assert.equal(out.filter((m) => m.id === 1).length, 1, 'exactly one answer for id 1');
    assert.equal(r.childLines.length, 1);
  });

  test('a frame one byte over --max-frame-bytes is rejected, the exact maximum passes', { timeout: 30000 }, async () => {
    const base = (pad) => frame({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad } });
    const size = Buffer.byteLength(base('x')) - 1; // without the newline
    const ok = await throughGuard(base('x'), { extra: [`--max-frame-bytes=${size}`] });
    assert.equal(ok.childLines.length, 1);
    assert.deepEqual(messages(ok.stdout)[0].result, {});
    const over = await throughGuard(base('xy'), { extra: [`--max-frame-bytes=${size}`] });
    assert.deepEqual(over.childLines, []);
    assert.match(messages(over.stdout)[0].error.message, /exceeds --max-frame-bytes/);
  });
});

describe('child → client: noise never reaches the client', () => {
  const init = frame({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  });
  const noisy = [
    { name: 'a banner at start', env: { BANNER: 'loading optional extension' }, shown: '"loading optional extension"' },
    { name: 'a warning mid-session', env: { WARN_AFTER: '1' }, shown: '"warning: configuration missing"' },
    { name: 'a partial last line', env: { PARTIAL_AT_EXIT: '{"jsonrpc":"2.0"' }, shown: '"{\\"jsonrpc\\":\\"2.0\\""' },
    { name: 'JSON glued to text', env: { BANNER: '{"jsonrpc":"2.0","method":"notifications/message"} trailing' }, shown: 'trailing' },
    { name: 'invalid UTF-8', env: { BANNER: 'caf\udce9' }, shown: '\\x' },
  ];
  for (const c of noisy) {
    test(c.name, { timeout: 30000 }, async () => {
      const r = await throughGuard(init + call(2, 'record', { n: 1 }) + frame({ jsonrpc: '2.0', id: 3, method: 'ping' }), { env: c.env });
      assertProtocolStdout(r.stdout);
      const out = messages(r.stdout);
      assert.deepEqual(
        out.map((m) => m.id),
        [1, 2, 3],
        'every request answered once, in order',
      );
      assert.ok(
        out.every((m) => m.result),
        'no synthetic errors',
      );
      assert.match(r.stderr, /mcpguard: child stdout line \d+ is not JSON-RPC: /);
      assert.ok(r.stderr.includes(c.shown), `stderr shows the bytes: ${r.stderr}`);
      assert.equal(sessionEnd(r.stderr).stdout_noise_lines, 1);
    });
  }

  test('--on-child-noise close ends the session and answers what was in flight', { timeout: 30000 }, async () => {
    // stdin stays open: the noise, not the client, must end the session.
    const { done } = runGuard(['--on-child-noise=close', '--', 'python3', fixture('recorder.py')], {
      input: init,
      keepOpen: true,
      env: { BANNER: 'hello' },
    });
    const r = await done;
    const out = messages(r.stdout);
    assert.equal(out.filter((m) => m.id === 1).length, 1, 'initialize answered exactly once');
    assert.equal(sessionEnd(r.stderr).end_reason, 'child_noise');
  });
});

describe('bounded memory and backpressure', () => {
  test('a client that stops reading stops the child, and memory stays bounded', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const count = join(dir, 'count');
      const total = 128 << 20;
      const g = runGuard(['--grace=60000', '--', 'python3', fixture('stdout-flood.py')], {
        keepOpen: true,
        env: { COUNT_FILE: count, TOTAL: String(total) },
      });
      g.child.stdout.pause(); // the client stops reading
      await new Promise((r) => setTimeout(r, 2000));
      const writtenWhilePaused = Number(readFileSync(count, 'utf8'));
      const rss = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${g.child.pid}/status`, 'utf8'))[1]) * 1024;
      assert.ok(writtenWhilePaused < 32 << 20, `the child kept writing: ${writtenWhilePaused} bytes`);
      assert.ok(rss < 150 << 20, `mcpguard RSS ${rss}`);
      let received = 0;
      g.child.stdout.on('data', (c) => {
        received += c.length;
      });
      g.child.stdout.resume(); // the client reads again: everything arrives
      g.child.stdin.end();
      const r = await g.done;
      assert.equal(r.code, 0);
      assert.equal(received, Number(readFileSync(count, 'utf8')), 'every byte the child wrote reached the client');
      assert.ok(received >= total);
    } finally {
      cleanup();
    }
  });

  test('--allow-batch: a batch reaches the child as one line and each request gets one answer', { timeout: 30000 }, async () => {
    const batch = `[${frame({ jsonrpc: '2.0', id: 1, method: 'ping' }).trim()},${frame({ jsonrpc: '2.0', id: 2, method: 'ping' }).trim()}]\n`;
    const r = await throughGuard(batch, { extra: ['--allow-batch'] });
    assert.deepEqual(r.childLines, [batch.trim()]);
    const out = messages(r.stdout);
    assert.deepEqual(out.map((m) => m.id).sort(), [1, 2]);
  });
});
