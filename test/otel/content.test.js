// --otlp-content on|off through the real binary: a tools/call span carries
// the call's arguments and result (gen_ai.tool.call.arguments / .result) only
// when asked, masked, and cut at 4096 bytes. Secrets planted in the
// arguments and in a result never reach the collector, in any request's bytes.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { fixture, killStarted, runGuard } from '../helpers/run.js';
import { conversation } from '../helpers/conversation.js';
import { startReceiver } from '../helpers/otlp-receiver.js';

after(killStarted);

const TIMEOUT = 40000;
const GHP = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const RESULT_SECRET = 'rs-9f8e7d6c5b4a39281706f5e4d3c2b1a0';
const CLEAN_ENV = {
  OTEL_EXPORTER_OTLP_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: '',
  OTEL_SDK_DISABLED: '',
  OTEL_TRACES_SAMPLER: '',
  OTEL_EXPORTER_OTLP_PROTOCOL: '',
  RESULT_SECRET,
};
const init = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const LONG = 'x'.repeat(10000);

/** Three calls (a secret in the arguments, one in the result, arguments over the cap) and a JSON-RPC error; the receiver's spans by request id and every request's plain bytes. */
async function run(args, env = {}) {
  const rx = await startReceiver();
  const c = conversation(['python3', fixture('otel-server.py')], ['--validate-args=on', `--otlp-endpoint=${rx.url}`, ...args], { ...CLEAN_ENV, ...env });
  try {
    c.send(init);
    await c.waitFor((m) => m.id === 'init', 'initialize answer');
    c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    c.send(call(1, 'echo', { text: `token ${GHP} here` }));
    await c.waitFor((m) => m.id === 1, 'answer 1');
    c.send(call(2, 'echo', { text: 'leak' }));
    const two = await c.waitFor((m) => m.id === 2, 'answer 2');
    assert.ok(two.result.content[0].text.includes(RESULT_SECRET), 'the client got the result as the server sent it (content export changes no frame)');
    c.send(call(3, 'echo', { text: LONG }));
    await c.waitFor((m) => m.id === 3, 'answer 3');
    c.send(call(4, 'fail', {}));
    await c.waitFor((m) => m.id === 4, 'answer 4');
    const r = await c.finish();
    assert.equal(r.code, 0, r.stderr);
    const byId = Object.fromEntries(
      rx
        .spans()
        .filter((s) => s.attrs['jsonrpc.request.id'] !== undefined)
        .map((s) => [s.attrs['jsonrpc.request.id'], s]),
    );
    const plain = rx.requests.map((q) => (q.headers['content-encoding'] === 'gzip' ? gunzipSync(q.raw) : q.raw));
    return { byId, plain, r };
  } finally {
    c.cleanup();
    await rx.close();
  }
}

test('--otlp-content on: arguments and results on tools/call spans, masked; no planted secret in any request sent; cut at 4096 bytes', {
  timeout: TIMEOUT,
}, async () => {
  // --secrets-in-args off: by default the gate would stop call 1 (a credential shape, nobody to ask) before it is a
  // dispatched call; this test is about what the export shows of a call that does run.
  const { byId, plain } = await run(['--otlp-content=on', '--secrets-in-args=off']);
  for (const bytes of plain) {
    assert.ok(!bytes.includes(GHP), 'the token in the arguments is in no request');
    assert.ok(!bytes.includes(RESULT_SECRET), 'the secret in the result is in no request');
    assert.ok(!bytes.includes('ghp_A1b2C3d4'), 'not even its head');
  }
  const one = byId['1'].attrs;
  assert.match(one['gen_ai.tool.call.arguments'], /^\{"text": ?"token ghp_\[REDACTED[^\]]*\] here"\}$/, one['gen_ai.tool.call.arguments']);
  assert.match(one['gen_ai.tool.call.result'], /"content"/);
  assert.match(one['gen_ai.tool.call.result'], /\[REDACTED/);
  const two = byId['2'].attrs;
  assert.equal(two['gen_ai.tool.call.arguments'], '{"text":"leak"}');
  assert.match(two['gen_ai.tool.call.result'], /leak\\"\} \[REDACTED:RESULT_SECRET\]/, two['gen_ai.tool.call.result']);
  const three = byId['3'].attrs['gen_ai.tool.call.arguments'];
  const m = /^(.*)…\(\+(\d+) bytes\)$/s.exec(three);
  assert.ok(m, three.slice(-40));
  assert.equal(Buffer.byteLength(m[1]), 4096, 'the shown part is the cap');
  assert.equal(Number(m[2]), Buffer.byteLength(JSON.stringify({ text: LONG })) - 4096, 'and the rest is counted');
  assert.equal(byId['4'].attrs['gen_ai.tool.call.result'], undefined, 'a JSON-RPC error has no result');
  assert.equal(byId['4'].attrs['gen_ai.tool.call.arguments'], '{}');
});

test('--otlp-content is off by default (and with off): neither attribute on any span', { timeout: TIMEOUT }, async () => {
  for (const args of [[], ['--otlp-content=off']]) {
    const { byId, plain } = await run(args);
    for (const s of Object.values(byId)) {
      assert.equal(s.attrs['gen_ai.tool.call.arguments'], undefined, JSON.stringify(args));
      assert.equal(s.attrs['gen_ai.tool.call.result'], undefined, JSON.stringify(args));
    }
    for (const bytes of plain) assert.ok(!bytes.includes('gen_ai.tool.call.'), 'no content attribute in any request');
  }
});

test('--otlp-content is checked before the server starts, naming the option and the value', { timeout: TIMEOUT }, async () => {
  const r = await runGuard(['--otlp-content=yes', '--', 'python3', '-c', 'import sys; sys.exit(9)']).done;
  assert.notEqual(r.code, 0);
  assert.notEqual(r.code, 9, 'the server never ran');
  assert.match(r.stderr, /--otlp-content/);
  assert.match(r.stderr, /yes/);
});
