// The response decorator of --stderr-excerpt-on-error (stderr/decorate.ts),
// on real frames read by the relay's own classifier and a real stderr tap:
// which answers get the call's stderr under _meta, and which are left alone.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { excerptDecorator, STDERR_META_KEY } from '../../dist/stderr/decorate.js';
import { StderrTap } from '../../dist/stderr/tap.js';
import { newCall } from '../../dist/mcp/call.js';
import { classifyFrame } from '../../dist/wire/jsonrpc.js';

const OPTIONS = { callBytes: 4096, processBytes: 65536, excerptBytes: 1024, retain: 'tail', passthroughBytes: null };

/** A tap, a call of `method`, and the stderr it wrote while in flight. */
function setUp(method, stderr) {
  const tap = new StderrTap(OPTIONS, {}, () => true);
  const call = newCall(7, 'n:7', method, method === 'tools/call' ? 'echo' : null);
  if (stderr !== null) tap.write(Buffer.from(stderr), [call.callId]);
  return { decorate: excerptDecorator(tap), call };
}

function response(body) {
  const message = classifyFrame(Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: 7, ...body })}\n`), { allowBatch: false });
  assert.equal(message.kind, 'response');
  return message;
}

describe('the stderr excerpt decorator', () => {
  test('a tools/call whose result says isError: true gets its stderr under result._meta', () => {
    const { decorate, call } = setUp('tools/call', 'Traceback: boom\n');
    const frame = decorate(call, response({ result: { content: [], isError: true } }));
    assert.ok(frame !== null);
    const answer = JSON.parse(frame.toString());
    assert.equal(answer.result._meta[STDERR_META_KEY], '[captured stderr]\nTraceback: boom\n');
    assert.equal(answer.result.isError, true);
  });

  test('a tools/call answered with a JSON-RPC error gets it under error.data._meta', () => {
    const { decorate, call } = setUp('tools/call', 'disk full\n');
    const frame = decorate(call, response({ error: { code: -32000, message: 'failed' } }));
    assert.equal(JSON.parse(frame.toString()).error.data._meta[STDERR_META_KEY], '[captured stderr]\ndisk full\n');
  });

  test('a successful call, a call without stderr, and another method are left as they came', () => {
    const ok = setUp('tools/call', 'chatter\n');
    assert.equal(ok.decorate(ok.call, response({ result: { content: [], isError: false } })), null);
    const quiet = setUp('tools/call', null);
    assert.equal(quiet.decorate(quiet.call, response({ result: { content: [], isError: true } })), null);
    const other = setUp('resources/read', 'chatter\n');
    assert.equal(other.decorate(other.call, response({ error: { code: -32000, message: 'failed' } })), null);
  });
});
