// `mcpguard check` in both protocol eras: --protocol-version 2026-07-28 (server/discover,
// tools/list, tools/call with the required _meta) and auto (the default: probe with
// server/discover, as the SDK v2 client does, then the era the answer shows). Real servers:
// the SDK v2 `serveStdio` (dual-era and modern-only), a hand-written Python 2026-07-28 server
// with switchable defects, server-everything and the Python legacy fixture.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ROOT, fixture } from '../helpers/run.js';
import { check, checkJson, killChecks } from '../helpers/check.js';

const V2 = ['node', fixture('check-v2-server.mjs')];
const MODERN = ['python3', fixture('check-modern-server.py')];
const LEGACY = ['python3', fixture('check-server.py')];
const EVERYTHING = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
const ECHO = ['--call', 'echo', '--args', '{"text":"hi"}'];

after(killChecks);

const notJson = (c) => `not JSON: unexpected '${c}' where a JSON value should start at byte 0`;
const stepsOf = (run) => run.steps.map((s) => [s.method, s.id, s.outcome]);
const MODERN_STEPS = [
  ['server/discover', 'mcpguard-discover', 'answered'],
  ['tools/list', 2, 'answered'],
  ['tools/call', 3, 'answered'],
];
const DISCOVERED = {
  era: 'modern',
  protocol_version: '2026-07-28',
  decided_by: 'discover_result',
  how: 'server/discover answered with a DiscoverResult listing 2026-07-28',
  probe_process: null,
};

describe('an SDK v2 server (serveStdio)', () => {
  test('dual-era, --protocol-version 2026-07-28: server/discover, tools/list, tools/call; clean', { timeout: 60000 }, async () => {
    const { code, report, run, messages } = await checkJson(['--protocol-version', '2026-07-28', ...ECHO, '--', ...V2]);
    assert.deepEqual(messages, []);
    assert.equal(code, 0);
    assert.equal(report.protocol_version, '2026-07-28');
    assert.deepEqual(run.era, {
      era: 'modern',
      protocol_version: '2026-07-28',
      decided_by: 'option',
      how: 'named by --protocol-version 2026-07-28',
      probe_process: null,
    });
    assert.deepEqual(stepsOf(run), MODERN_STEPS);
    assert.equal(run.steps[0].detail, 'versions 2026-07-28, server "check-v2-server" 2.0.0');
    assert.deepEqual(run.server, { protocol_version: '2026-07-28', name: 'check-v2-server', version: '2.0.0', tools: ['echo', 'confirm'] });
    assert.deepEqual(run.stdout, { bytes: run.stdout.bytes, lines: 3, messages: 3, notifications: 0, server_requests: [] });
    assert.deepEqual([run.exit.code, run.exit.how], [0, 'after_stdin_closed']);
  });

  for (const legacy of ['serve', 'reject']) {
    test(`legacy: '${legacy}', auto (the default): reported modern, on one process; clean`, { timeout: 60000 }, async () => {
      const { code, report, run, messages } = await checkJson([...ECHO, '--', ...V2], { env: { LEGACY: legacy } });
      assert.deepEqual(messages, []);
      assert.equal(code, 0);
      assert.equal(report.protocol_version, 'auto');
      assert.deepEqual(run.era, DISCOVERED);
      assert.deepEqual(stepsOf(run), MODERN_STEPS);
      // One process: the probe's discover was its first request, and it said "ready" once.
      assert.equal(run.stderr.excerpt, `check-v2-server: ready (legacy ${legacy})\n`);
    });
  }

  test('a banner after the discover answer: the exact line, under 2026-07-28 and auto', { timeout: 90000 }, async () => {
    const expected = {
      stream: 'stdout',
      kind: 'non_protocol',
      line: 2,
      bytes: String.raw`"discover answered\n"`,
      length: 18,
      reason: notJson('d'),
      message: String.raw`non-protocol stdout on line 2: "discover answered\n" (${notJson('d')})`,
    };
    for (const version of ['2026-07-28', 'auto']) {
      const { code, run } = await checkJson(['--protocol-version', version, '--', ...V2], { env: { NOISE: 'after-discover' } });
      assert.equal(code, 1, version);
      assert.deepEqual(run.violations, [expected], version);
      assert.deepEqual(
        run.steps.map((s) => s.outcome),
        ['answered', 'answered'],
        version,
      );
    }
    const t = await check(['--', ...V2], { env: { NOISE: 'after-discover' } });
    assert.equal(t.code, 1);
    assert.deepEqual(
      t.stdout.split('\n').filter((l) => l.startsWith('  ✗ ')),
      [`  ✗ ${expected.message}`],
    );
    assert.match(t.stdout, /^ {2}era: modern, protocol 2026-07-28 \(server\/discover answered with a DiscoverResult listing 2026-07-28\)$/m);
  });

  test('console.log in a tool handler: line 3, between the call and its answer', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson([...ECHO, '--', ...V2], { env: { NOISE: 'on-call' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [String.raw`non-protocol stdout on line 3: "echo called\n" (${notJson('e')})`]);
  });

  test('modern-only, checked with --protocol-version 2025-11-25: initialize answered -32022, and the report says why', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--protocol-version', '2025-11-25', '--', ...V2], { env: { LEGACY: 'reject' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [
      'initialize: answered with error -32022 "Unsupported protocol version: 2025-11-25" (the server supports ["2026-07-28"], the modern era, which has no initialize: check it with --protocol-version auto or 2026-07-28)',
    ]);
    assert.deepEqual(
      run.steps.map((s) => s.outcome),
      ['error', 'not_sent', 'not_sent'],
    );
    assert.deepEqual([run.era.era, run.era.decided_by], ['legacy', 'option']);
  });
});

describe('a hand-written 2026-07-28 server', () => {
  test('clean: every request carried the _meta it requires (else -32602)', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson([...ECHO, '--', ...MODERN]);
    assert.deepEqual(messages, []);
    assert.equal(code, 0);
    assert.deepEqual(stepsOf(run), MODERN_STEPS);
    assert.equal(
      run.stderr.excerpt,
      'modern-server: ready\nmodern-server: got server/discover, tools/list, tools/call from mcpguard-check; 0 responses from the client\n',
    );
  });

  test('a server-to-client request on stdout is a finding with its line and bytes, and gets no answer', { timeout: 90000 }, async () => {
    for (const version of ['2026-07-28', 'auto']) {
      const { code, run } = await checkJson(['--protocol-version', version, ...ECHO, '--', ...MODERN], { env: { NOISE: 'server-request' } });
      assert.equal(code, 1, version);
      assert.deepEqual(
        run.violations.map((v) => [v.kind, v.line, v.length]),
        [['server_request', 3, 134]],
        version,
      );
      assert.equal(
        run.violations[0].message,
        String.raw`server-to-client request on line 3: "{\"jsonrpc\": \"2.0\", \"id\": \"s1\", \"method\": \"elicitation/create\", \"params\": {\"message\": \"Sure?\", \"requestedSchema\": {\"type\""…(+14 bytes) (elicitation/create: the 2026-07-28 stdio transport forbids requests on the server's stdout; they travel in input_required results)`,
      );
      assert.deepEqual(run.stdout.server_requests, ['elicitation/create']);
      assert.match(run.stderr.excerpt, /; 0 responses from the client\n$/);
    }
  });

  test('a request written before the discover answer, while probing: a finding once the era is known', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--', ...MODERN], { env: { NOISE: 'request-first' } });
    assert.equal(code, 1);
    assert.equal(run.era.era, 'modern');
    assert.deepEqual(messages, [
      String.raw`server-to-client request on line 1: "{\"jsonrpc\": \"2.0\", \"id\": \"s0\", \"method\": \"roots/list\"}\n" (roots/list: the 2026-07-28 stdio transport forbids requests on the server's stdout; they travel in input_required results)`,
    ]);
  });

  test('a result without resultType; a notification 2026-07-28 does not have', { timeout: 90000 }, async () => {
    const bare = await checkJson(['--', ...MODERN], { env: { NOISE: 'no-result-type' } });
    assert.equal(bare.code, 1);
    assert.deepEqual(bare.messages, ['tools/list: the result on line 2 has no "resultType" (every 2026-07-28 result must carry one)']);
    const old = await checkJson(['--', ...MODERN], { env: { NOISE: 'old-notification' } });
    assert.equal(old.code, 1);
    assert.deepEqual(old.messages, [
      String.raw`notification the era does not have on line 2: "{\"jsonrpc\": \"2.0\", \"method\": \"notifications/elicitation/complete\", \"params\": {\"elicitationId\": \"e1\"}}\n" (notifications/elicitation/complete is not a notification of protocol 2026-07-28)`,
    ]);
  });

  test('input_required on tools/call: reported, never fulfilled; asking for an undeclared capability is a finding', { timeout: 90000 }, async () => {
    const state = await checkJson([...ECHO, '--', ...MODERN], { env: { NOISE: 'input-state' } });
    assert.deepEqual(state.messages, []);
    assert.equal(state.code, 0);
    assert.deepEqual(
      [state.run.steps[2].outcome, state.run.steps[2].detail],
      ['input_required', 'input_required, with a requestState only; mcpguard check does not fulfil it'],
    );
    assert.match(state.run.stderr.excerpt, /got server\/discover, tools\/list, tools\/call from/); // no retry

    const asks = await checkJson([...ECHO, '--', ...MODERN], { env: { NOISE: 'input-required' } });
    assert.equal(asks.code, 1);
    assert.deepEqual(asks.messages, [
      'tools/call "echo": the input_required result on line 3 asks for elicitation/create ("confirm"), which the request\'s clientCapabilities did not declare (mcpguard check declares none)',
    ]);
    assert.equal(asks.run.steps[2].detail, 'input_required, asks for elicitation/create ("confirm"); mcpguard check does not fulfil it');
  });
});

describe('legacy servers', () => {
  test('server-everything under auto: reported legacy, passes as with 2025-11-25', { timeout: 90000 }, async () => {
    const { code, run, messages } = await checkJson([...ECHO.slice(0, 2), '--args', '{"message":"hi"}', '--', EVERYTHING, 'stdio']);
    assert.deepEqual(messages, []);
    assert.equal(code, 0);
    assert.deepEqual(
      { ...run.era, probe_process: null },
      {
        era: 'legacy',
        protocol_version: '2025-11-25',
        decided_by: 'discover_error',
        probe_process: null,
        how: 'server/discover answered with error -32601 "Method not found"; initialize went to a new process, as the SDK v2 client does',
      },
    );
    assert.deepEqual(
      run.steps.map((s) => [s.method, s.outcome]),
      [
        ['initialize', 'answered'],
        ['tools/list', 'answered'],
        ['ping', 'answered'],
        ['tools/call', 'answered'],
      ],
    );
    assert.deepEqual([run.era.probe_process.exit.code, run.era.probe_process.exit.how], [0, 'after_stdin_closed']);
    assert.equal(run.stderr.excerpt, 'Starting default (STDIO) server...\n');
  });

  test('a server that exits on server/discover: legacy, started again for initialize; not a violation', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--', ...LEGACY], { env: { UNKNOWN: 'exit' } });
    assert.deepEqual(messages, []);
    assert.equal(code, 0);
    assert.equal(run.era.decided_by, 'exited');
    const probe = run.era.probe_process;
    assert.deepEqual([probe.step.outcome, probe.exit.code, probe.exit.how, probe.stdout.lines], ['gone', 1, 'before_stdin_closed', 0]);
    assert.equal(probe.stderr.excerpt, 'check-server: ready\ncheck-server: unknown method server/discover, exiting\n');
    assert.deepEqual(
      run.steps.map((s) => s.outcome),
      ['answered', 'answered', 'answered'],
    );
  });

  test('a server that never answers server/discover: legacy after --start-timeout', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--start-timeout', '1500', '--', ...LEGACY], { env: { UNKNOWN: 'ignore' } });
    assert.deepEqual(messages, []);
    assert.equal(code, 0);
    assert.equal(run.era.decided_by, 'no_answer');
    assert.match(run.era.how, /^server\/discover: no response within --start-timeout 1500 ms; initialize went to a new process/);
  });

  test('a banner under auto: found in the probe process too, each with its own line number', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--', ...LEGACY], { env: { NOISE: 'banner' } });
    assert.equal(code, 1);
    const line = String.raw`non-protocol stdout on line 1: "loading optional extension\n" (${notJson('l')})`;
    assert.deepEqual(messages, [`probe process: ${line}`, line]);
    assert.deepEqual(
      run.violations.map((v) => v.process ?? null),
      ['probe', null],
    );
  });

  test('a legacy server under --protocol-version 2026-07-28: server/discover refused, nothing else sent', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--protocol-version', '2026-07-28', '--', ...LEGACY]);
    assert.equal(code, 1);
    assert.deepEqual(messages, [
      'server/discover: answered with error -32601 "Method not found" (a server of the legacy era? check it with --protocol-version auto, or name its version)',
    ]);
    assert.deepEqual(stepsOf(run), [
      ['server/discover', 'mcpguard-discover', 'error'],
      ['tools/list', 2, 'not_sent'],
    ]);
  });
});
