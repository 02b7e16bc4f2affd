// The OpenTelemetry export through the real binary: a fixture server that
// writes a stderr line per call, a client (this file) that sends a W3C
// traceparent in one request's _meta, and an OTLP/HTTP receiver in this
// process that decodes every request with the official OTLP protobuf
// definitions (test/helpers/otlp-receiver.js), in both encodings. Each span,
// event and log record is asserted by the conventions
// (semantic-conventions-genai: mcp.md, gen-ai-security.md).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, fixture, killStarted, tempDir } from '../helpers/run.js';
import { callEnds, conversation } from '../helpers/conversation.js';
import { startReceiver } from '../helpers/otlp-receiver.js';

after(killStarted);

const TIMEOUT = 40000;
const SERVER = ['python3', fixture('otel-server.py')];
const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const init = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const call = (id, name, args, meta) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) } });
// No OTEL_* of the machine running the tests may leak into these runs (the protocol is the default, http/protobuf, unless a test sets it).
const CLEAN_ENV = {
  OTEL_EXPORTER_OTLP_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: '',
  OTEL_SDK_DISABLED: '',
  OTEL_TRACES_SAMPLER: '',
  OTEL_EXPORTER_OTLP_PROTOCOL: '',
};

async function session(args, env = {}, summary = 'json') {
  const scratch = tempDir();
  const policy = join(scratch.dir, 'policy.json');
  writeFileSync(
    policy,
    JSON.stringify({
      default: 'allow',
      rules: [
        { tool: 'delete_file', decision: 'ask' },
        { tool: 'exec', decision: 'deny' },
      ],
    }),
  );
  const c = conversation(
    SERVER,
    ['--validate-args=on', `--policy=${policy}`, `--approve-cmd=python3 ${fixture('approve.py')}`, `--session-summary=${summary}`, ...args],
    {
      ...CLEAN_ENV,
      ...env,
    },
  );
  c.send(init);
  await c.waitFor((m) => m.id === 'init', 'initialize answer');
  c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  const cleanup = c.cleanup;
  c.cleanup = () => {
    cleanup();
    scratch.cleanup();
  };
  return c;
}

/** Six calls, one of each kind of end: forwarded with the client's trace, approved, denied by a person, denied by the policy, refused by the schema, answered with an error. */
async function sixCalls(c) {
  c.send(call(1, 'echo', { text: 'hi' }, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'rojo=1' }));
  await c.waitFor((m) => m.id === 1, 'answer 1');
  c.send(call(2, 'delete_file', { path: '/tmp/x' }));
  await c.waitFor((m) => m.id === 2, 'answer 2');
  c.send(call(3, 'delete_file', { path: '/etc/x' }));
  await c.waitFor((m) => m.id === 3, 'answer 3');
  c.send(call(4, 'exec', {}));
  await c.waitFor((m) => m.id === 4, 'answer 4');
  c.send(call(5, 'echo', { text: 5 }));
  await c.waitFor((m) => m.id === 5, 'answer 5');
  c.send(call(6, 'fail', {}));
  await c.waitFor((m) => m.id === 6, 'answer 6');
}

for (const [protocol, contentType] of [
  ['', 'application/x-protobuf'],
  ['http/json', 'application/json'],
])
  test(`${protocol || 'http/protobuf (the default)'}: every call is a SERVER span by the MCP conventions; the client trace context is its parent; the gate steps are guardrail events; stderr lines are logs on their span`, {
    timeout: TIMEOUT,
  }, async () => {
    await conventions(protocol, contentType);
  });

async function conventions(protocol, contentType) {
  const rx = await startReceiver();
  const c = await session([`--otlp-endpoint=${rx.url}`], { OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
  try {
    await sixCalls(c);
    c.send(call(7, 'noise', {}));
    await c.waitFor((m) => m.id === 7, 'answer 7');
    const r = await c.finish();
    assert.equal(r.code, 0, r.stderr);
    const spans = rx.spans();
    const root = spans.find((s) => s.name === 'mcpguard session');
    assert.ok(root, 'the session root span');
    assert.equal(root.kind, 1, 'INTERNAL');
    assert.equal(root.parentSpanId ?? '', '');
    const sessionId = root.attrs['mcp.session.id'];
    assert.match(sessionId, /\S/);
    const byId = (id) => spans.find((s) => s.attrs['jsonrpc.request.id'] === String(id));
    for (const s of spans.filter((s) => s !== root)) {
      assert.equal(s.kind, 2, `${s.name} is SERVER`);
      assert.equal(s.attrs['network.transport'], 'pipe');
      assert.equal(s.attrs['mcp.session.id'], sessionId);
    }
    const one = byId(1);
    assert.equal(one.name, 'tools/call echo');
    assert.equal(one.traceId, CLIENT_TRACE, "call 1 joins the client's trace");
    assert.equal(one.parentSpanId, CLIENT_SPAN, "as the child of the client's span");
    assert.equal(one.traceState, 'rojo=1', "the client's tracestate goes with its parent");
    assert.equal(one.attrs['mcp.method.name'], 'tools/call');
    assert.equal(one.attrs['gen_ai.tool.name'], 'echo');
    assert.equal(one.attrs['gen_ai.operation.name'], 'execute_tool');
    assert.equal(one.attrs['mcp.protocol.version'], '2025-06-18');
    assert.equal(one.attrs['mcpguard.call.state'], 'completed');
    assert.equal(one.attrs['error.type'], undefined);
    assert.equal(one.status?.code ?? 0, 0);
    for (const id of [2, 3, 4, 5, 6]) {
      assert.equal(byId(id).traceId, root.traceId, `call ${id} without trace context is in the session's trace`);
      assert.equal(byId(id).parentSpanId, root.spanId, `under the session's span`);
    }
    const events = (id) => Object.fromEntries(byId(id).events.map((e) => [e.attrs['gen_ai.guardrail.component.name'], e.attrs]));
    // Approved by --approve-cmd: schema allow, policy escalate (rule 1), approval allow with its wait.
    const two = events(2);
    assert.equal(two['mcpguard.schema']['gen_ai.guardrail.verdict.type'], 'allow');
    assert.equal(two['mcpguard.policy']['gen_ai.guardrail.verdict.type'], 'escalate');
    assert.equal(two['mcpguard.policy']['gen_ai.guardrail.security.policy.rule.id'], '1');
    assert.equal(two['mcpguard.policy']['gen_ai.guardrail.security.policy.id'], 'policy.json');
    assert.equal(two['mcpguard.approval']['gen_ai.guardrail.verdict.type'], 'allow');
    assert.equal(two['mcpguard.approval']['gen_ai.guardrail.target.subtype'], 'tool_call');
    assert.equal(two['mcpguard.approval']['gen_ai.operation.name'], 'run_guardrail');
    assert.equal(typeof two['mcpguard.approval']['mcpguard.guardrail.duration_ms'], 'number', "the approval's wait");
    // The schema and policy steps' own durations, timed by the gate (two clock reads a step, only with export on).
    for (const [id, step] of [
      [1, 'mcpguard.schema'],
      [2, 'mcpguard.schema'],
      [2, 'mcpguard.policy'],
      [4, 'mcpguard.policy'],
      [5, 'mcpguard.schema'],
    ]) {
      const ms = events(id)[step]['mcpguard.guardrail.duration_ms'];
      assert.equal(typeof ms, 'number', `call ${id}: ${step} has its duration`);
      assert.ok(ms >= 0 && ms < 5000, `call ${id}: ${step} took ${ms} ms`);
    }
    assert.equal(byId(2).attrs['mcpguard.call.state'], 'completed');
    // Denied by the person (the command): approval deny, the span an error.
    const three = events(3);
    assert.equal(three['mcpguard.approval']['gen_ai.guardrail.verdict.type'], 'deny');
    assert.equal(three['mcpguard.approval']['gen_ai.guardrail.action.type'], 'block');
    assert.equal(byId(3).attrs['mcpguard.call.state'], 'denied');
    assert.equal(byId(3).attrs['error.type'], 'tool_error');
    assert.equal(byId(3).status.code, 2);
    // Denied by the policy's rule 2: no approval step.
    const four = events(4);
    assert.equal(four['mcpguard.policy']['gen_ai.guardrail.verdict.type'], 'deny');
    assert.equal(four['mcpguard.policy']['gen_ai.guardrail.security.policy.rule.id'], '2');
    assert.equal(four['mcpguard.approval'], undefined);
    // Refused by the schema: the schema step denies, no policy step after it.
    const five = events(5);
    assert.equal(five['mcpguard.schema']['gen_ai.guardrail.verdict.type'], 'deny');
    assert.equal(five['mcpguard.policy'], undefined);
    assert.equal(byId(5).attrs['mcpguard.call.state'], 'rejected');
    // The server's JSON-RPC error: its code as error.type and rpc.response.status_code.
    assert.equal(byId(6).attrs['error.type'], '-32001');
    assert.equal(byId(6).attrs['rpc.response.status_code'], '-32001');
    // The stderr line each dispatched call caused is a log record on that call's span; the banner is on the session's.
    const logs = rx.logs();
    for (const id of [1, 2, 6]) {
      const log = logs.find((l) => l.body.stringValue === `working on request ${id}`);
      assert.ok(log, `the stderr line of call ${id}`);
      assert.equal(log.spanId, byId(id).spanId, `call ${id}: ${JSON.stringify(log.attrs)}`);
      assert.equal(log.traceId, byId(id).traceId);
    }
    const banner = logs.find((l) => l.body.stringValue === 'otel-server exiting');
    assert.ok(banner, 'the stderr line outside any call');
    assert.equal(banner.spanId, root.spanId);
    assert.equal(logs.filter((l) => /working on request [345]/.test(l.body.stringValue)).length, 0, 'refused calls reached no server, so wrote nothing');
    // Metrics: the operation histogram with the advised buckets, the session histogram, refusals by rule.
    const metrics = rx.metrics();
    const op = metrics.findLast((m) => m.name === 'mcp.server.operation.duration');
    assert.deepEqual(op.histogram.dataPoints[0].explicitBounds, [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]);
    assert.equal(op.unit, 's');
    assert.ok(metrics.some((m) => m.name === 'mcp.server.session.duration'));
    assert.ok(metrics.some((m) => m.name === 'mcpguard.calls.refused'));
    // The summary and the session's end record say what was sent.
    assert.ok(r.summary.otlp.sent.spans >= 7, JSON.stringify(r.summary.otlp));
    const end = r.records.find((x) => x.type === 'session_end');
    assert.deepEqual(end.otlp, r.summary.otlp);
    assert.equal(callEnds(r.records).length, 8);
    // mcpguard's own diagnostic (the server's stdout line that is not JSON-RPC): a WARN record on the session's span.
    const warn = logs.find((l) => /child stdout line \d+ is not JSON-RPC/.test(l.body.stringValue));
    assert.ok(warn, JSON.stringify(logs.map((l) => l.body.stringValue)));
    assert.equal(warn.severityText, 'WARN');
    assert.equal(warn.spanId, root.spanId);
    // Every request in the encoding asked for, each decoded by the official definitions (rx.spans() etc. throw otherwise).
    assert.ok(rx.requests.length >= 3);
    for (const q of rx.requests) assert.equal(q.headers['content-type'], contentType, q.path);
    const kinds = Object.fromEntries(metrics.map((m) => [m.name, Object.keys(m).find((k) => ['histogram', 'sum', 'gauge'].includes(k))]));
    assert.equal(kinds['mcp.server.operation.duration'], 'histogram');
    assert.equal(kinds['mcp.server.session.duration'], 'histogram');
    assert.equal(metrics.find((m) => m.name === 'mcp.server.session.duration').unit, 's');
    assert.equal(kinds['mcpguard.calls.refused'], 'sum');
    const refused = metrics.findLast((m) => m.name === 'mcpguard.calls.refused').sum;
    assert.equal(refused.isMonotonic, true);
  } finally {
    c.cleanup();
    await rx.close();
  }
}

test('export is off by default and with --otlp off: no request reaches the endpoint, the summary has no otlp', { timeout: TIMEOUT }, async () => {
  const rx = await startReceiver();
  try {
    for (const [args, env] of [
      [[], {}],
      [['--otlp=off'], { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }],
      [[], { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_SDK_DISABLED: 'true' }],
    ]) {
      const c = await session(args, env);
      try {
        c.send(call(1, 'echo', { text: 'hi' }));
        await c.waitFor((m) => m.id === 1, 'answer 1');
        const r = await c.finish();
        assert.equal(r.summary.otlp, undefined, JSON.stringify(args));
      } finally {
        c.cleanup();
      }
    }
    assert.equal(rx.requests.length, 0);
  } finally {
    await rx.close();
  }
});

test('--otlp-endpoint is checked before the server starts, naming the option and the value', { timeout: TIMEOUT }, async () => {
  const { runGuard } = await import('../helpers/run.js');
  for (const bad of ['not a url', 'ftp://h/x', 'http://user:pw@h:4318']) {
    const r = await runGuard([`--otlp-endpoint=${bad}`, '--', 'python3', '-c', 'import sys; sys.exit(9)']).done;
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes('--otlp-endpoint'), r.stderr);
    assert.ok(r.stderr.includes(bad.includes('pw') ? 'without user or password' : 'http://'), r.stderr);
  }
});

test('export otlp: the records give the same spans with the same ids as the live export; exporting twice sends the same ids again', {
  timeout: TIMEOUT,
}, async () => {
  const { runGuard } = await import('../helpers/run.js');
  const live = await startReceiver();
  const back = await startReceiver();
  const c = await session([`--otlp-endpoint=${live.url}`]);
  try {
    await sixCalls(c);
    const r = await c.finish();
    assert.equal(r.code, 0, r.stderr);
    const sessionId = r.summary.session_id;
    for (let round = 1; round <= 2; round++) {
      const e = await runGuard(['export', 'otlp', sessionId.slice(0, 12), `--otlp-endpoint=${back.url}`, `--record-dir=${c.recordDir}`], { env: CLEAN_ENV })
        .done;
      assert.equal(e.code, 0, e.stderr);
      assert.match(e.stdout.toString(), new RegExp(`^${sessionId}: 7 call\\(s\\); sent 8 span\\(s\\)`));
    }
    const later = await runGuard(['export', 'otlp', sessionId, '--since=2999-01-01', `--otlp-endpoint=${back.url}`, `--record-dir=${c.recordDir}`], {
      env: CLEAN_ENV,
    }).done;
    assert.equal(later.code, 0, later.stderr);
    assert.match(later.stdout.toString(), /: 0 call\(s\); sent 0 span\(s\), 0 log record\(s\)/, '--since after every call: nothing');
    const none = await runGuard(['export', 'otlp', `--record-dir=${c.recordDir}`], { env: CLEAN_ENV }).done;
    assert.equal(none.code, 125);
    assert.match(none.stderr, /mcpguard export: no endpoint: give --otlp-endpoint URL/);
    const key = (s) => `${s.traceId}/${s.spanId}/${s.parentSpanId ?? ''}/${s.name}/${s.kind}/${s.startTimeUnixNano}/${s.endTimeUnixNano}`;
    const liveKeys = live.spans().map(key).sort();
    const backSpans = back.spans();
    assert.equal(backSpans.length, 2 * liveKeys.length, 'each round sends every span once');
    const backKeys = [...new Set(backSpans.map(key))].sort();
    assert.deepEqual(backKeys, liveKeys, 'the same spans under the same ids, parents and times');
    // Attributes agree, but for what the records do not keep: the server's error code.
    const liveById = new Map(live.spans().map((s) => [s.spanId, s]));
    for (const s of backSpans) {
      const l = liveById.get(s.spanId);
      const { 'error.type': le, 'rpc.response.status_code': lr, ...lrest } = l.attrs;
      const { 'error.type': be, 'rpc.response.status_code': br, ...brest } = s.attrs;
      assert.deepEqual(brest, lrest, s.name);
      assert.equal(be, le === '-32001' ? '_OTHER' : le);
      // The schema and policy steps' durations are timed live only (the records do not keep them).
      const untimed = (e) => {
        const { 'mcpguard.guardrail.duration_ms': ms, ...rest } = e.attrs;
        return ['mcpguard.schema', 'mcpguard.policy'].includes(e.attrs['gen_ai.guardrail.component.name']) ? rest : e.attrs;
      };
      assert.deepEqual(s.events.map(untimed), l.events.map(untimed));
    }
    const logKey = (l) => `${l.traceId}/${l.spanId}/${l.body.stringValue}`;
    assert.deepEqual(
      [...new Set(back.logs().map(logKey))].sort(),
      [
        ...new Set(
          live
            .logs()
            .filter((l) => l.attrs['log.iostream'] === 'stderr')
            .map(logKey),
        ),
      ].sort(),
    );
  } finally {
    c.cleanup();
    await live.close();
    await back.close();
  }
});

test('the human summary says what the export sent, dropped and failed', { timeout: TIMEOUT }, async () => {
  const rx = await startReceiver();
  const c = await session([`--otlp-endpoint=${rx.url}`], {}, 'human');
  try {
    c.send(call(1, 'echo', { text: 'hi' }));
    await c.waitFor((m) => m.id === 1, 'answer 1');
    const r = await c.finish();
    assert.match(r.stderr, /^mcpguard: {3}otlp sent 3 spans, \d+ logs, \d+ metrics; dropped 0; failed 0$/m, r.stderr);
  } finally {
    c.cleanup();
    await rx.close();
  }
});

test('export off loads nothing of it: outside otel/, otel/ is imported for types or with a dynamic import() only', () => {
  const offenders = [];
  for (const folder of ['session', 'cli', 'views']) {
    for (const file of readdirSync(join(ROOT, 'src', folder)).filter((f) => f.endsWith('.ts'))) {
      const text = readFileSync(join(ROOT, 'src', folder, file), 'utf8');
      for (const m of text.matchAll(/^import\s+(type\s+)?[^;]*?from\s+'\.\.\/otel\/[^']+';/gms))
        if (m[1] === undefined) offenders.push(`${folder}/${file}: ${m[0]}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test('a collector that is down, or that never answers, changes nothing the client sees; the summary says what was not delivered', {
  timeout: TIMEOUT,
}, async () => {
  const { createServer } = await import('node:net');
  // Accepts connections and never answers: every export request waits until the session's bounded flush gives up.
  const held = [];
  const stall = createServer((socket) => held.push(socket));
  await new Promise((resolve) => stall.listen(0, '127.0.0.1', resolve));
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = closed.address().port;
  await new Promise((resolve) => closed.close(resolve)); // nothing listens there now
  try {
    for (const endpoint of [`http://127.0.0.1:${closedPort}`, `http://127.0.0.1:${stall.address().port}`]) {
      const c = await session([`--otlp-endpoint=${endpoint}`]);
      try {
        await sixCalls(c);
        const r = await c.finish();
        assert.equal(r.code, 0, r.stderr);
        assert.deepEqual(
          r.out.filter((m) => m.id !== 'init').map((m) => m.id),
          [1, 2, 3, 4, 5, 6],
          'every call answered, once',
        );
        assert.equal(r.summary.otlp.sent.spans, 0, endpoint);
        assert.ok(r.summary.otlp.dropped.spans + r.summary.otlp.failed.spans >= 7, JSON.stringify(r.summary.otlp));
      } finally {
        c.cleanup();
      }
    }
  } finally {
    for (const s of held) s.destroy();
    await new Promise((resolve) => stall.close(resolve));
  }
});

test('a collector answering 503 with Retry-After, stalling, or answering garbage, while calls run: every answer arrives once, exit 0 within the bounded flush, the session record says what was sent, dropped and failed', {
  timeout: 90000,
}, async () => {
  const many = (step) => Array.from({ length: 200 }, () => step);
  for (const [fault, plan] of [
    [
      '503',
      [
        { status: 503, retryAfter: '1' },
        { status: 503, retryAfter: '1' },
        { status: 503, retryAfter: '1' },
      ],
    ],
    ['stall', many('stall')],
    ['garbage', many('garbage')],
  ]) {
    const rx = await startReceiver(plan);
    const c = await session([`--otlp-endpoint=${rx.url}`]);
    try {
      await sixCalls(c);
      const closing = Date.now();
      const r = await c.finish();
      // The flush is bounded at 2 s (otel/live.ts); a stalled collector would otherwise hold the session forever.
      assert.ok(Date.now() - closing < 15000, `${fault}: the session ended within its bounded flush`);
      assert.equal(r.code, 0, `${fault}: ${r.stderr}`);
      assert.deepEqual(
        r.out.filter((m) => m.id !== 'init').map((m) => m.id),
        [1, 2, 3, 4, 5, 6],
        `${fault}: every call answered, once`,
      );
      const end = r.records.find((x) => x.type === 'session_end');
      assert.deepEqual(end.otlp, r.summary.otlp, `${fault}: the session record holds the summary's otlp`);
      const { sent, dropped, failed, errors } = end.otlp;
      if (fault === '503') {
        // Retried after the collector's Retry-After, then delivered: nothing lost.
        assert.ok(sent.spans >= 7, JSON.stringify(end.otlp));
        assert.equal(dropped.spans + failed.spans, 0, JSON.stringify(end.otlp));
        assert.ok(errors >= 1, JSON.stringify(end.otlp));
        const traces = rx.requests.filter((q) => q.path === '/v1/traces');
        assert.ok(traces.length >= 2, 'the refused batch was sent again');
        assert.ok(traces[1].at - traces[0].at >= 900, `not before Retry-After: ${traces[1].at - traces[0].at} ms`);
        assert.ok(rx.spans().length >= 7);
      } else {
        assert.equal(sent.spans, 0, `${fault}: ${JSON.stringify(end.otlp)}`);
        assert.ok(dropped.spans + failed.spans >= 7, `${fault}: ${JSON.stringify(end.otlp)}`);
      }
    } finally {
      c.cleanup();
      await rx.close();
    }
  }
});
