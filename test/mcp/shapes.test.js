// MCP method shapes: the params of the client's MCP methods against the
// schema of the session's era, before anything reaches the server.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { scanJson } from '../../dist/wire/json-scan.js';
import { checkShape } from '../../dist/mcp/shapes.js';
import { fixture, frame, killStarted, readLines, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';

after(killStarted);

/** checkShape over the params of a literal message, as the relay calls it. */
function shape(method, params, modern = false) {
  const buf = Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params === undefined ? {} : { params }) })}\n`);
  const root = scanJson(buf, 0, buf.length - 1);
  assert.ok(root.ok);
  return checkShape(method, root.value.members.get('params'), buf, modern);
}

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const CLIENT = { name: 'c', version: '1' };

describe('checkShape', () => {
  const good = [
    ['tools/call', { name: 'echo' }],
    ['tools/call', { name: 'echo', arguments: { a: [1, { b: null }] }, extra: 1 }],
    ['tools/call', { name: 'x', arguments: {}, inputResponses: { k: {} }, requestState: 's', _meta: META }, true],
    ['tools/list', undefined],
    ['tools/list', { cursor: 'abc' }],
    ['prompts/get', { name: 'p', arguments: { a: 'x', b: '' } }],
    ['resources/read', { uri: 'file:///x' }],
    ['initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: CLIENT }],
    ['notifications/cancelled', { requestId: 'a', reason: 'r' }],
    ['notifications/cancelled', { requestId: 7 }],
    ['notifications/cancelled', {}], // 2025-11-25: optional
    [
      'subscriptions/listen',
      { notifications: {}, _meta: { ...META, 'io.modelcontextprotocol/clientInfo': CLIENT, 'io.modelcontextprotocol/logLevel': 'info' } },
      true,
    ],
    ['completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: 'v' } }],
    ['vendor/extension', { anything: [1, 2] }],
  ];
  for (const [method, params, modern] of good) {
    test(`accepts ${method} ${JSON.stringify(params)}`, () => assert.equal(shape(method, params, modern), null));
  }
  const bad = [
    ['tools/call', undefined, /params.name is required/],
    ['tools/call', { name: 3 }, /params.name must be a string, got number/],
    ['tools/call', { name: 'x', arguments: [] }, /params.arguments must be an object, got array/],
    ['tools/call', { name: 'x', arguments: 'rm -rf /' }, /params.arguments must be an object, got string/],
    ['tools/call', { name: 'x', requestState: {}, _meta: META }, /params.requestState must be a string/, true],
    ['tools/call', { name: 'x', _meta: 'hi' }, /params._meta must be an object, got string/],
    ['prompts/get', { name: 'p', arguments: { a: 1 } }, /params.arguments\["a"\] must be a string/],
    ['resources/read', { uri: null }, /params.uri must be a string, got null/],
    ['tools/list', { cursor: 5 }, /params.cursor must be a string/],
    ['initialize', { protocolVersion: '2025-06-18', capabilities: {} }, /params.clientInfo is required/],
    ['initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c' } }, /params.clientInfo.version must be a string/],
    ['notifications/cancelled', { requestId: 1.5 }, /requestId must be a string or an integer/],
    ['notifications/cancelled', { reason: 'r', _meta: META }, /params.requestId is required/, true],
    ['subscriptions/listen', { _meta: META }, /params.notifications is required/, true],
    ['tools/list', { _meta: { ...META, 'io.modelcontextprotocol/logLevel': 'loud' } }, /logLevel/, true],
    ['tools/list', { _meta: { ...META, 'io.modelcontextprotocol/clientInfo': { name: 'c' } } }, /clientInfo"\]\.version must be a string/, true],
    ['completion/complete', { ref: {}, argument: { name: 'a' } }, /params.argument.value must be a string/],
  ];
  for (const [method, params, why, modern] of bad) {
    test(`refuses ${method} ${JSON.stringify(params)}`, () => assert.match(shape(method, params, modern) ?? 'accepted', why));
  }
});

describe('through the binary', () => {
  test('a tools/call with the wrong shape is answered -32602 by mcpguard, leaves zero bytes at the server, and the session goes on', {
    timeout: 30000,
  }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const lines = join(dir, 'lines');
      const r = await runGuardUngated([`--record-dir=${join(dir, 'records')}`, '--', 'python3', fixture('recorder.py')], {
        input:
          frame({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'record', arguments: 'rm -rf /' } }) +
          frame({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'record', arguments: { ok: 1 } } }),
        env: { RECORD_LINES: lines },
        timeout: 30000,
      }).done;
      const out = r.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const one = out.find((m) => m.id === 1);
      assert.equal(one.error.code, -32602);
      assert.equal(one.error.data.source, 'mcpguard');
      assert.equal(one.error.data.rule, 'method_shape');
      assert.match(one.error.message, /tools\/call: params.arguments must be an object, got string/);
      assert.ok(out.find((m) => m.id === 2).result, 'the next call went through');
      assert.deepEqual(
        readLines(lines).map((l) => JSON.parse(l).id),
        [2],
        'zero bytes of the refused call reached the server',
      );
      const s = sessionEnd(r.stderr);
      assert.equal(s.shape_rejections, 1);
      assert.equal(s.end_reason, 'client_eof', 'a wrong shape does not close the session');
    } finally {
      cleanup();
    }
  });
});
