// Secrets in mcpguard's own output: what it quotes from either side (rejected
// client frames, child stdout noise, reasons, the command line, check reports)
// goes through the same masker as the child's stderr, and so do its records
// and its summary. Every run here also goes through the suite-wide scan for
// the planted secrets (helpers/run.js); the tests at the end show that scan
// catches a leak.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  PLANTED_ENV,
  PLANTED_SHAPES,
  assertNoPlanted,
  findPlanted,
  fixture,
  frame,
  killStarted,
  runCommand,
  runGuard,
  sessionEnd,
  tempDir,
} from '../helpers/run.js';

after(killStarted);

const TOKEN = PLANTED_ENV.MCPGUARD_TEST_API_TOKEN;
const LONG = PLANTED_ENV.MCPGUARD_TEST_LONG_SECRET;
const SK = PLANTED_SHAPES.MCPGUARD_TEST_SHAPE_OPENAI.value;
const BEARER = PLANTED_SHAPES.MCPGUARD_TEST_SHAPE_BEARER.value;
const SERVER = ['python3', fixture('secret-server.py')];

/** Every character as a `\u00XX` escape: what no encoder writes, and still the same secret. */
const uEscaped = (text) => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
/**
 * `head` + padding + a space + `secret` + `tail`, with `secret` starting `before` bytes ahead of
 * byte 120, where quotes are cut: cut before masking, what shows of it would pass for text.
 */
const straddle = (head, secret, tail = '', before = 16) => `${head}${'p'.repeat(120 - before - head.length - 1)} ${secret}${tail}`;

/** Run mcpguard (records on, in a temporary directory) in front of the secret server; returns outputs and records. */
async function guarded(args, { input = '', env = {}, server = SERVER } = {}) {
  const { dir, cleanup } = tempDir();
  try {
    const { done } = runGuard(['--record-dir', dir, ...args, '--', ...server], { input, env });
    const result = await done;
    const files = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
    const text = files.map((f) => readFileSync(join(dir, f), 'utf8')).join('');
    const records = text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    return { ...result, recordText: text, records };
  } finally {
    cleanup();
  }
}

/**
 * Nothing planted anywhere: stderr, records, and the answers mcpguard wrote
 * (their error messages; an answer's id is the client's own, echoed by the protocol).
 */
function assertClean(r) {
  assertNoPlanted(r.stderr, 'stderr');
  assertNoPlanted(r.recordText, 'records');
  for (const line of r.stdout.toString().split('\n').filter(Boolean)) {
    const message = JSON.parse(line);
    assertNoPlanted(JSON.stringify(message.error ?? message.result ?? null), 'an answer');
  }
}

const diagLines = (stderr) => stderr.split('\n').filter((l) => l.startsWith('mcpguard: '));

describe('rejected client frames', () => {
  // Each secret straddles byte 120, where the quote is cut.
  const bearerFrame = `${straddle('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"h":"', BEARER, '"', 21)}\n`;
  const skFrame = `${straddle('{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"x":"', SK, '"}}}', 19)}\n`;
  const memberFrame = `{"jsonrpc":"2.0","id":3,"method":"ping","${TOKEN}":1}\n`;
  const idFrame = `{"jsonrpc":"2.0","id":"${SK}","method":"tools/call","params":"run"}\n`;

  for (const [name, bad] of [
    ['a bearer token', bearerFrame],
    ['an sk- key', skFrame],
    ['an env secret as a member name', memberFrame],
    ['an sk- key as the id', idFrame],
  ]) {
    test(`${name}, on-invalid close: stderr, the answer and the records show none of it`, { timeout: 30000 }, async () => {
      const r = await guarded([], { input: bad });
      assertClean(r);
      const line = diagLines(r.stderr).find((l) => l.includes('rejected client line 1'));
      assert.ok(line, r.stderr);
      assert.match(line, /\[REDACTED/);
      assert.ok(
        r.records.some((rec) => rec.type === 'reject' || rec.state === 'rejected'),
        r.recordText,
      );
    });
  }

  test('all four, on-invalid reject: every quote, answer, reason and record is masked', { timeout: 30000 }, async () => {
    const r = await guarded(['--on-invalid', 'reject'], { input: bearerFrame + skFrame + memberFrame + idFrame });
    assertClean(r);
    const rejected = diagLines(r.stderr).filter((l) => l.includes('rejected client line'));
    assert.equal(rejected.length, 4, r.stderr);
    for (const l of rejected) assert.match(l, /\[REDACTED/, l);
    // The quote of the sk- frame keeps the key's prefix and the frame's length.
    assert.match(rejected[1], /sk-\[REDACTED\]/);
    const reasons = r.records.filter((rec) => rec.type === 'reject').map((rec) => rec.reason);
    assert.ok(
      reasons.some((reason) => reason.includes('[REDACTED:MCPGUARD_TEST_API_TOKEN]')),
      reasons.join('\n'),
    );
    const ended = r.records.find((rec) => rec.type === 'call_end' && typeof rec.request_id === 'string');
    assert.equal(ended.request_id, 'sk-[REDACTED]');
    const answers = r.stdout
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    assert.ok(
      answers.some((a) => a.error.message.includes('[REDACTED:MCPGUARD_TEST_API_TOKEN]')),
      r.stdout.toString(),
    );
  });
});

describe('child stdout noise', () => {
  test('an env secret on a noise line is masked as [REDACTED:NAME], like the same value on stderr', { timeout: 30000 }, async () => {
    const said = `debug: token=${TOKEN}`;
    const r = await guarded([], { env: { STDOUT_LINES: JSON.stringify([said, straddle('late', TOKEN)]), STDERR_LINES: JSON.stringify([said]) } });
    assertClean(r);
    const noise = diagLines(r.stderr).filter((l) => l.includes('is not JSON-RPC'));
    assert.equal(noise.length, 2, r.stderr);
    assert.match(noise[0], /"debug: token=\[REDACTED:MCPGUARD_TEST_API_TOKEN\]"/);
    // Masked first, then cut at 120 bytes: the cut falls inside the replacement.
    assert.match(noise[1], /p \[REDACTED:MCPGUA"…\(\+\d+ bytes\)/);
    assert.match(r.stderr, /^server\| debug: token=\[REDACTED:MCPGUARD_TEST_API_TOKEN\]$/m, 'the mirrored child stderr');
    const summary = sessionEnd(r.stderr);
    assert.ok(summary.redactions >= 1);
  });
});

describe('env secrets longer than 64 bytes', () => {
  test('masked to their last byte: plain, with \\/ for /, after a near copy, and beside a value with the same first 64 bytes', { timeout: 30000 }, async () => {
    const twin = `${LONG.slice(0, 64)}${'Q'.repeat(80)}`;
    const periodic = `${'A'.repeat(70)}9f3Kd81LxQpT0wVb`;
    const lines = [`plain ${LONG} end`, `json {"v":"${LONG.replace(/\//g, '\\/')}"} end`, `near ${LONG.slice(0, 66)}${LONG} end`, `periodic A${periodic} end`];
    const r = await guarded([], {
      env: { STDERR_LINES: JSON.stringify(lines), STDOUT_LINES: JSON.stringify(lines), TWIN_SECRET: twin, PERIODIC_SECRET: periodic },
    });
    assertClean(r);
    for (const text of [r.stderr, r.recordText]) assert.ok(!text.includes('9f3Kd81LxQpT0wVb'), "the periodic value's tail");
    assert.match(r.stderr, /^server\| plain \[REDACTED:(MCPGUARD_TEST_LONG_SECRET|TWIN_SECRET)\] end$/m);
    assert.match(r.stderr, /^server\| json \{"v":"\[REDACTED:\w+\]"\} end$/m);
    assert.match(r.stderr, /^server\| periodic \[REDACTED:PERIODIC_SECRET\] end$/m);
  });
});

describe('JSON-escaped secrets', () => {
  const lines = [
    `{"token":"${uEscaped(TOKEN.slice(0, 3))}${TOKEN.slice(3)}"}`,
    `{"token":"${uEscaped(TOKEN)}"}`,
    `{"key":"\\u0073k-${SK.slice(3)}"}`,
    `{"auth":"Bearer ${uEscaped(BEARER.slice(7, 9))}${BEARER.slice(9)}"}`,
    `{"long":"${LONG.slice(0, 70).replace(/\//g, '\\/')}${uEscaped(LONG.slice(70))}"}`,
  ];
  test('masked in the mirrored stderr stream, in noise diagnostics and in the records', { timeout: 30000 }, async () => {
    const r = await guarded([], { env: { STDERR_LINES: JSON.stringify(lines), STDOUT_LINES: JSON.stringify(lines) } });
    assertClean(r);
    assert.equal(diagLines(r.stderr).filter((l) => l.includes('is not JSON-RPC')).length, lines.length, r.stderr);
    assert.match(r.stderr, /^server\| \{"token":"\[REDACTED:MCPGUARD_TEST_API_TOKEN\]"\}$/m);
    assert.match(r.stderr, /^server\| \{"key":"\\u0073k-\[REDACTED\]"\}$/m);
    assert.ok(sessionEnd(r.stderr).redactions >= lines.length);
  });
});

describe('the command line and mcpguard check', () => {
  test('an --api-key argument and an env value in the arguments are masked in the session record', { timeout: 30000 }, async () => {
    const r = await guarded([], { server: [...SERVER, '--api-key', SK, `--token=${TOKEN}`] });
    assertClean(r);
    const start = r.records.find((rec) => rec.type === 'session_start');
    assert.deepEqual(start.args.slice(1), ['--api-key', 'sk-[REDACTED]', '--token=[REDACTED:MCPGUARD_TEST_API_TOKEN]']);
  });

  test('a command that cannot start is named masked', { timeout: 30000 }, async () => {
    const r = await guarded([], { server: [`/nonexistent/${TOKEN}`] });
    assertClean(r);
    assert.match(r.stderr, /cannot start "\/nonexistent\/\[REDACTED:MCPGUARD_TEST_API_TOKEN\]"/);
  });

  test('a check option error quoting a key is masked', { timeout: 30000 }, async () => {
    const r = await runGuard(['check', '--env', SK, '--', 'true']).done;
    assert.equal(r.code, 2);
    assertNoPlanted(r.stderr, 'stderr');
    assert.match(r.stderr, /--env expects KEY=VALUE, got 'sk-\[REDACTED\]'/);
  });

  test('check reports (text and JSON) mask the server name, tool names, noise, stderr and the command line', { timeout: 60000 }, async () => {
    const env = {
      SERVER_NAME: JSON.stringify(`srv-${TOKEN}`),
      TOOL_NAMES: JSON.stringify([SK, 'echo']),
      STDOUT_LINES: JSON.stringify([straddle('noise', LONG)]),
      STDERR_LINES: JSON.stringify([`err ${BEARER}`]),
    };
    for (const json of [true, false]) {
      const { done } = runGuard(['check', ...(json ? ['--json'] : []), '--', ...SERVER, `--key=${TOKEN}`], { env });
      const r = await done;
      assert.equal(r.code, 1, r.stderr);
      assertNoPlanted(r.stdout, 'the report');
      assertNoPlanted(r.stderr, 'stderr');
      const report = r.stdout.toString();
      assert.match(report, /\[REDACTED:MCPGUARD_TEST_API_TOKEN\]/);
      assert.match(report, /sk-\[REDACTED\]/);
    }
  });
});

describe('the planted-secret scan itself', () => {
  test('finds every planted value and shape, plain, cut short, and JSON-escaped', () => {
    for (const value of [...Object.values(PLANTED_ENV), ...Object.values(PLANTED_SHAPES).map((s) => s.value)]) {
      assert.ok(findPlanted(Buffer.from(`x ${value} y`)).length > 0, value);
      assert.ok(findPlanted(`x ${value.slice(0, value.length - 4)}`).length > 0, `${value}, cut`);
      assert.ok(findPlanted(`{"v":"${uEscaped(value)}"}`).length > 0, `${value}, escaped`);
    }
    assert.deepEqual(findPlanted(`[REDACTED:MCPGUARD_TEST_API_TOKEN] sk-[REDACTED] ${SK}`, { envOnly: true }), []);
    assert.throws(() => assertNoPlanted(`a ${LONG.slice(70)}`, 'here'), /planted secret leaked in here:\n {2}MCPGUARD_TEST_LONG_SECRET/);
  });

  test('a run whose output shows a planted value fails', { timeout: 30000 }, async () => {
    const { done } = runCommand('sh', ['-c', 'printf "%s\\n" "$MCPGUARD_TEST_API_TOKEN" >&2']);
    await assert.rejects(done, /planted secret leaked in the stderr of sh .*MCPGUARD_TEST_API_TOKEN/s);
  });

  test('an unmasked path through mcpguard is caught: a forwarded answer carrying an env secret', { timeout: 30000 }, async () => {
    // Answers are forwarded as they came (never masked): the stdout scan sees the value.
    const input = frame({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    const { done } = runGuard(['--records', 'off', '--', ...SERVER], { input, env: { SERVER_NAME: JSON.stringify(TOKEN) } });
    await assert.rejects(done, /planted secret leaked in the stdout of .*MCPGUARD_TEST_API_TOKEN/s);
  });

  test('a record file holding a planted value fails the cleanup of its temporary directory', () => {
    const { dir, cleanup } = tempDir();
    writeFileSync(join(dir, 's_test.jsonl'), `{"type":"session_start","args":["${SK}"]}\n`);
    assert.throws(cleanup, /planted secret leaked in record file .*MCPGUARD_TEST_SHAPE_OPENAI/s);
  });
});
