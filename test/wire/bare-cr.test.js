// A bare CR inside a line: mcpguard splits on \n only, but a reader with
// universal newlines (the Python SDK's text stdin) ends a line at a CR, so a
// CR inside an allowed frame could carry a second, unchecked message. Only a
// line's trailing CRLF may hold one; anywhere else the line is refused, in
// both directions.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { classifyFrame } from '../../dist/wire/jsonrpc.js';
import { scanJson } from '../../dist/wire/json-scan.js';
import { fixture, frame, killStarted, readLines, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const classify = (text) => classifyFrame(Buffer.from(text), { allowBatch: false });

describe("the line scan refuses a CR that is not the line's CRLF", () => {
  test('a trailing CRLF passes; a CR anywhere else before the newline is a parse error', () => {
    assert.equal(classify('{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n').kind, 'request');
    assert.equal(classify(' {"jsonrpc":"2.0","id":1,"method":"ping"} \r\n').kind, 'request');
    for (const text of [
      '{"jsonrpc":"2.0","id":1,\r"method":"ping"}\n',
      '\r{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
      '{"jsonrpc":"2.0","id":1,"method":"ping"}\r\r\n',
      '{"jsonrpc":"2.0","id":1,"method":"ping"}\r \n',
      '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":[1,\r2]}}\n',
    ]) {
      const got = classify(text);
      assert.equal(got.kind, 'invalid', JSON.stringify(text));
      assert.equal(got.code, -32700);
      assert.match(got.reason, /bare CR/);
    }
  });

  test('plain JSON (not a line) keeps CR as whitespace', () => {
    assert.equal(scanJson(Buffer.from('{\r\n"a":\r1}')).ok, true);
  });
});

const smuggled = frame({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'evil', arguments: {} } }).trimEnd();
const carrier = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"note":\r${smuggled}\r}}}\n`;
const init =
  frame({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } }) +
  frame({ jsonrpc: '2.0', method: 'notifications/initialized' });

/** mcpguard in front of voice-server.py; `extra` replaces the default --on-invalid=reject ([] for the user's defaults). */
async function throughGuard(input, extra = ['--on-invalid=reject']) {
  const { dir, cleanup } = tempDir();
  try {
    const lines = join(dir, 'lines');
    const actions = join(dir, 'actions');
    const { done } = runGuard([...extra, '--', 'python3', fixture('voice-server.py')], {
      input,
      env: { RECORD_LINES: lines, RECORD_ACTIONS: actions },
    });
    const r = await done;
    return { ...r, childLines: readLines(lines), actions: readLines(actions) };
  } finally {
    cleanup();
  }
}

describe('a bare CR through the relay', () => {
  test('client → server: the carrier is answered -32700 and no byte of it reaches the server', { timeout: 30000 }, async () => {
    const r = await throughGuard(init + carrier + frame({ jsonrpc: '2.0', id: 3, method: 'ping' }));
    assert.deepEqual(r.actions, [], 'the smuggled tools/call never ran');
    assert.equal(r.childLines.length, 3, `only initialize, initialized and the ping arrived: ${r.childLines}`);
    assert.ok(
      r.childLines.every((l) => !l.includes('\\r')),
      'no CR reached the server',
    );
    const out = messages(r.stdout);
    const refused = out.find((m) => m.id === 1);
    assert.equal(refused.error.code, -32700);
    assert.match(refused.error.message, /^mcpguard rejected the frame: not JSON: bare CR/);
    assert.equal(refused.error.data.source, 'mcpguard');
    assert.ok(
      out.some((m) => m.id === 3 && m.result),
      'the session went on',
    );
    assert.equal(sessionEnd(r.stderr).rejected.client, 1);
  });

  test("client → server with the user's defaults (--on-invalid close): the carrier is answered -32700, the session ends, the smuggled call never runs", {
    timeout: 30000,
  }, async () => {
    const r = await throughGuard(init + carrier + frame({ jsonrpc: '2.0', id: 3, method: 'ping' }), []);
    assert.deepEqual(r.actions, [], 'the smuggled tools/call never ran');
    assert.equal(r.childLines.length, 2, `only initialize and initialized arrived: ${r.childLines}`);
    const refused = messages(r.stdout).find((m) => m.id === 1);
    assert.equal(refused.error.code, -32700);
    assert.match(refused.error.message, /^mcpguard rejected the frame: not JSON: bare CR/);
    const end = sessionEnd(r.stderr);
    assert.equal(end.end_reason, 'invalid_client_frame');
    assert.equal(end.rejected.client, 1);
  });

  test('server → client: a line with a bare CR never reaches the client', { timeout: 30000 }, async () => {
    const r = await throughGuard(init + frame({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'cr', arguments: {} } }));
    assert.equal(r.stdout.indexOf(0x0d), -1, 'no CR on the client side');
    assert.ok(!r.stdout.toString().includes('forged by the server'), 'the smuggled answer did not pass');
    assert.match(r.stderr, /child stdout line \d+ is not JSON-RPC: .*bare CR/);
    assert.equal(sessionEnd(r.stderr).stdout_noise_lines, 1);
    const answer = messages(r.stdout).filter((m) => m.id === 5);
    assert.equal(answer.length, 1);
    assert.match(answer[0].error.message, /^mcpguard refused the server's answer: its answer could not be forwarded: not JSON: bare CR/);
  });
});
