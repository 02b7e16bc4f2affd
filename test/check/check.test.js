// `mcpguard check`: the clean-stdout release test, run against real servers
// (a Python fixture with one switchable defect, and @modelcontextprotocol/server-everything).
// Each test asserts the exact findings, through the JSON report unless it tests the text.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FIXTURES, ROOT, fixture } from '../helpers/run.js';
import { check, checkJson, killChecks } from '../helpers/check.js';

const SERVER = ['python3', fixture('check-server.py')];
const EVERYTHING = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');

after(killChecks);

const STDERR = 'check-server: ready\ncheck-server: bye\n';
const notJson = (c) => `not JSON: unexpected '${c}' where a JSON value should start at byte 0`;

describe('the Python fixture server', () => {
  test('clean: no findings, every step answered, exit 0 after stdin closed', { timeout: 60000 }, async () => {
    const { code, report, run, messages, stderr } = await checkJson(['--', ...SERVER]);
    assert.equal(code, 0);
    assert.equal(stderr, '');
    assert.equal(report.result, 'clean');
    assert.equal(report.protocol_version, 'auto');
    assert.deepEqual(messages, []);
    // The probe's answer (-32601) makes it legacy; initialize then goes to a new process.
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
    const probe = run.era.probe_process;
    assert.deepEqual([probe.step.method, probe.step.id, probe.step.outcome], ['server/discover', 'mcpguard-discover', 'error']);
    assert.deepEqual(probe.stdout, { bytes: probe.stdout.bytes, lines: 1, messages: 1, notifications: 0, server_requests: [] });
    assert.deepEqual([probe.exit.code, probe.exit.how], [0, 'after_stdin_closed']);
    assert.deepEqual(probe.stderr, { bytes: STDERR.length, masked: 0, excerpt: STDERR });
    assert.deepEqual(
      run.steps.map((s) => [s.method, s.id, s.outcome]),
      [
        ['initialize', 1, 'answered'],
        ['tools/list', 2, 'answered'],
        ['ping', 'mcpguard-ping', 'answered'],
      ],
    );
    assert.deepEqual(run.server, { protocol_version: '2025-11-25', name: 'check-server', version: '1.0', tools: ['add', 'fail'] });
    assert.deepEqual(
      { ...run.exit, ms_after_stdin_closed: 0 },
      { code: 0, signal: null, how: 'after_stdin_closed', ms_after_stdin_closed: 0, signals_sent: [], survivors: [] },
    );
    assert.deepEqual(run.stdout, { bytes: run.stdout.bytes, lines: 3, messages: 3, notifications: 0, server_requests: [] });
    assert.deepEqual(run.stderr, { bytes: STDERR.length, masked: 0, excerpt: STDERR });
  });

  test('clean, text report: what a person reads', { timeout: 60000 }, async () => {
    const r = await check(['--', ...SERVER]);
    assert.equal(r.code, 0);
    const text = r.stdout.replace(/\d+ ms after/g, 'N ms after').replace(/answered in \d+ ms/g, 'answered in N ms');
    assert.equal(
      text,
      `mcpguard check -- python3 ${fixture('check-server.py')}
protocol auto, start timeout 30000 ms, timeout 10000 ms, grace 5000 ms

run 1 of 1: ok
  era: legacy, protocol 2025-11-25 (server/discover answered with error -32601 "Method not found"; initialize went to a new process, as the SDK v2 client does)
  probe process: server/discover: answered in N ms with error -32601 "Method not found"; stdout 1 line, 104 bytes, 1 protocol message; exit status 0, N ms after stdin closed; stderr 38 bytes (not shown)
  stdout: 3 lines, 505 bytes, 3 protocol messages
  initialize: answered in N ms: protocol 2025-11-25, server "check-server" 1.0
  tools/list: answered in N ms: 2 tools: add, fail
  ping: answered in N ms
  exit: exit status 0, N ms after stdin closed
  stderr: 38 bytes (not a violation: shown for diagnosis)
    | check-server: ready
    | check-server: bye

result: ok, 1 clean run
`,
    );
  });

  test('banner at start: line 1, bytes escaped; text and JSON list the same findings', { timeout: 60000 }, async () => {
    const expected = [String.raw`non-protocol stdout on line 1: "loading optional extension\n" (${notJson('l')})`];
    const j = await checkJson(['--protocol-version', '2025-11-25', '--', ...SERVER], { env: { NOISE: 'banner' } });
    assert.equal(j.code, 1);
    assert.equal(j.report.result, 'violations');
    assert.deepEqual(j.messages, expected);
    assert.deepEqual(j.run.violations[0], {
      stream: 'stdout',
      kind: 'non_protocol',
      line: 1,
      bytes: String.raw`"loading optional extension\n"`,
      length: 27,
      reason: notJson('l'),
      message: expected[0],
    });
    // The protocol still worked: the finding is the only problem.
    assert.deepEqual(
      j.run.steps.map((s) => s.outcome),
      ['answered', 'answered', 'answered'],
    );

    const t = await check(['--protocol-version', '2025-11-25', '--', ...SERVER], { env: { NOISE: 'banner' } });
    assert.equal(t.code, 1);
    assert.deepEqual(
      t.stdout
        .split('\n')
        .filter((l) => l.startsWith('  ✗ '))
        .map((l) => l.slice(4)),
      expected,
    );
    assert.match(t.stdout, /^run 1 of 1: FAIL, 1 violation$/m);
    assert.match(t.stdout, /\nresult: FAIL, 1 violation \(1 of 1 run failed\)\n$/);
  });

  test('a warning mid-session: found on the line where it appeared', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson(['--', ...SERVER], { env: { NOISE: 'warning' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [String.raw`non-protocol stdout on line 2: "DeprecationWarning: pkg_resources is deprecated as an API\n" (${notJson('D')})`]);
  });

  test('a last line without newline', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--protocol-version', '2025-11-25', '--', ...SERVER], { env: { NOISE: 'partial' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [`last line without newline on line 4: "shutting down" (${notJson('s')})`]);
    assert.equal(run.violations[0].length, 13);
  });

  test('a response to an unknown id', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--', ...SERVER], { env: { NOISE: 'unknown-id' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [
      String.raw`response to an unknown id on line 3: "{\"jsonrpc\": \"2.0\", \"id\": 99, \"result\": {}}\n" (no request with id 99 was sent)`,
    ]);
    // The real answer that followed still counts.
    assert.deepEqual(
      run.steps.map((s) => s.outcome),
      ['answered', 'answered', 'answered'],
    );
  });

  test('a bad id type: the line is invalid and the request stays unanswered', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson(['--timeout', '1000', '--', ...SERVER], { env: { NOISE: 'bad-id' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [
      String.raw`invalid JSON-RPC on line 3: "{\"jsonrpc\": \"2.0\", \"id\": true, \"result\": {}}\n" ("id" must be a string or an integer, got true)`,
      'ping: no response within --timeout 1000 ms',
    ]);
  });

  test('a response without "jsonrpc"', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson(['--timeout', '1000', '--', ...SERVER], { env: { NOISE: 'no-jsonrpc' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, [
      String.raw`invalid JSON-RPC on line 3: "{\"id\": \"mcpguard-ping\", \"result\": {}}\n" (missing "jsonrpc": "2.0")`,
      'ping: no response within --timeout 1000 ms',
    ]);
  });

  test('a line over --max-frame-bytes: reported with its first bytes, never buffered whole', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson(['--protocol-version', '2025-11-25', '--max-frame-bytes', '100', '--start-timeout', '1500', '--', ...SERVER]);
    assert.equal(code, 1);
    assert.equal(messages.length, 2);
    assert.match(
      messages[0],
      /^oversize line on line 1: "\{\\"jsonrpc\\": \\"2\.0\\", \\"id\\": 1, .*"…\(\+\d+ bytes\) \(\d+ bytes, over --max-frame-bytes 100\)$/,
    );
    assert.equal(messages[1], 'initialize: no response within --start-timeout 1500 ms');
  });

  test('a server that ignores stdin EOF is stopped through the grace path (SIGTERM)', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--grace', '300', '--', ...SERVER], { env: { ON_EOF: 'ignore' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, ['shutdown: the server was still running --grace 300 ms after stdin closed; stopped with SIGTERM']);
    assert.equal(run.exit.how, 'after_sigterm');
    assert.equal(run.exit.signal, 'SIGTERM');
    assert.deepEqual(run.exit.signals_sent, ['SIGTERM']);
    assert.ok(run.exit.ms_after_stdin_closed >= 300, `${run.exit.ms_after_stdin_closed} ms`);
  });

  test('… and one that also ignores SIGTERM is killed (SIGKILL)', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--grace', '300', '--', ...SERVER], { env: { ON_EOF: 'ignore', ON_TERM: 'ignore' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, ['shutdown: the server was still running --grace 300 ms after stdin closed and 300 ms after SIGTERM; killed with SIGKILL']);
    assert.deepEqual([run.exit.how, run.exit.signal, run.exit.signals_sent], ['after_sigkill', 'SIGKILL', ['SIGTERM', 'SIGKILL']]);
    assert.ok(run.exit.ms_after_stdin_closed >= 600, `${run.exit.ms_after_stdin_closed} ms`);
  });

  test('a process left behind in the group is found and stopped', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--grace', '300', '--', ...SERVER], { env: { LEAVE_CHILD: '1' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, ['shutdown: processes the server started were still running after it exited; sent them SIGTERM']);
    assert.equal(run.exit.how, 'after_stdin_closed');
    assert.deepEqual(run.exit.survivors, []);
  });

  test('a non-zero exit status after stdin closed', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson(['--', ...SERVER], { env: { EXIT_CODE: '3' } });
    assert.equal(code, 1);
    assert.deepEqual(messages, ['shutdown: the server ended with exit status 3 after stdin closed']);
  });

  test('--call: a good call is clean; an isError result and an unknown tool are findings', { timeout: 90000 }, async () => {
    const good = await checkJson(['--call', 'add', '--args', '{"a":2,"b":3}', '--', ...SERVER]);
    assert.equal(good.code, 0);
    assert.deepEqual(good.run.steps.at(-1), {
      method: 'tools/call',
      label: 'tools/call "add"',
      id: 3,
      outcome: 'answered',
      ms: good.run.steps.at(-1).ms,
      detail: '',
    });

    const failing = await checkJson(['--call', 'fail', '--', ...SERVER]);
    assert.equal(failing.code, 1);
    assert.deepEqual(failing.messages, [
      String.raw`tools/call "fail": the result has "isError": true: "{\"content\": [{\"type\": \"text\", \"text\": \"it failed\"}], \"isError\": true}"`,
    ]);

    const unknown = await checkJson(['--call', 'nope', '--', ...SERVER]);
    assert.equal(unknown.code, 1);
    assert.deepEqual(unknown.messages, ['tools/call "nope": answered with error -32602 "Unknown tool: nope"']);
  });

  test('--env reaches the server, its value is masked on stderr and never reported', { timeout: 60000 }, async () => {
    const secret = 'sk-test-0123456789abcdef';
    const { code, report, run, messages, stdout } = await checkJson(
      ['--protocol-version', '2025-11-25', '--env', 'NOISE=banner', '--env', `API_TOKEN=${secret}`, '--', ...SERVER],
      { env: { SECRET_LOG: '1' } },
    );
    assert.equal(code, 1);
    assert.equal(messages.length, 1);
    assert.match(messages[0], /^non-protocol stdout on line 1: "loading optional extension\\n"/);
    assert.deepEqual(report.env_added, ['NOISE', 'API_TOKEN']);
    assert.equal(run.stderr.masked, 1);
    assert.match(run.stderr.excerpt, /^check-server: ready\ntoken is \S+\ncheck-server: bye\n$/);
    assert.ok(!stdout.includes(secret), 'the secret appears nowhere in the report');
  });

  test('stderr: counted in full, kept only up to 64 KiB (first and last half)', { timeout: 60000 }, async () => {
    const flood = 4 * 1024 * 1024;
    const { code, run } = await checkJson(['--', ...SERVER], { env: { STDERR_BYTES: String(flood) } });
    assert.equal(code, 0);
    assert.equal(run.stderr.bytes, STDERR.length + flood);
    const excerpt = run.stderr.excerpt;
    assert.ok(Buffer.byteLength(excerpt) < 64 * 1024 + 200, `${Buffer.byteLength(excerpt)} bytes`);
    assert.match(
      excerpt,
      new RegExp(`^\\[stderr truncated: kept first 32768 and last 32768 of ${STDERR.length + flood} bytes, omitted \\d+\\]\ncheck-server: ready\n`),
    );
    assert.match(excerpt, /\ncheck-server: bye\n$/);
  });

  test('--cwd: the server starts in that directory (a relative script path resolves there)', { timeout: 60000 }, async () => {
    const { code, messages } = await checkJson(['--cwd', FIXTURES, '--', 'python3', 'check-server.py']);
    assert.equal(code, 0);
    assert.deepEqual(messages, []);
  });

  test('a server-to-client request is legal and answered (ping: an empty result)', { timeout: 60000 }, async () => {
    const { code, run, messages } = await checkJson(['--', ...SERVER], { env: { NOISE: 'server-ping' } });
    assert.equal(code, 0);
    assert.deepEqual(messages, []);
    assert.deepEqual(run.stdout.server_requests, ['ping']);
    assert.equal(
      run.stderr.excerpt,
      'check-server: ready\ncheck-server: the client answered {"id": "s1", "jsonrpc": "2.0", "result": {}}\ncheck-server: bye\n',
    );
  });

  test('names the server chose cannot forge a line of the text report', { timeout: 60000 }, async () => {
    const r = await check(['--', ...SERVER], { env: { NOISE: 'forged-name' } });
    assert.equal(r.code, 0);
    assert.deepEqual(
      r.stdout.split('\n').filter((l) => l.startsWith('result:')),
      ['result: ok, 1 clean run'],
    );
    assert.match(r.stdout, /server "check-server\\nresult: ok, 1 clean run" 1\.0\n/);
    assert.match(r.stdout, /2 tools: add\\u202e\\x1b\[2J, fail\n/);
    assert.doesNotMatch(r.stdout, /[\u001b\u202e]/);
  });

  test('--runs 2: one report per run', { timeout: 90000 }, async () => {
    const { code, report } = await checkJson(['--protocol-version', '2025-11-25', '--runs', '2', '--', ...SERVER], { env: { NOISE: 'banner' } });
    assert.equal(code, 1);
    assert.equal(report.violations, 2);
    assert.deepEqual(
      report.runs.map((r) => [r.run, r.result, r.violations.length]),
      [
        [1, 'violations', 1],
        [2, 'violations', 1],
      ],
    );
  });
});

describe('@modelcontextprotocol/server-everything', () => {
  test('stdio: clean, exit 0', { timeout: 90000 }, async () => {
    const { code, run, messages } = await checkJson(['--call', 'echo', '--args', '{"message":"hi"}', '--', EVERYTHING, 'stdio']);
    assert.deepEqual(messages, []);
    assert.equal(code, 0);
    assert.equal(run.server.name, 'mcp-servers/everything');
    assert.equal(run.server.protocol_version, '2025-11-25');
    assert.ok(run.server.tools.includes('echo'));
    assert.deepEqual(
      run.steps.map((s) => s.outcome),
      ['answered', 'answered', 'answered', 'answered'],
    );
    assert.equal(run.exit.how, 'after_stdin_closed');
    assert.equal(run.exit.code, 0);
    assert.equal(run.stderr.excerpt, 'Starting default (STDIO) server...\n');
  });

  test('bogus: its usage text on stdout, no answer, exit status 1 before stdin closed', { timeout: 90000 }, async () => {
    const { code, run, messages } = await checkJson(['--protocol-version', '2025-11-25', '--', EVERYTHING, 'bogus']);
    assert.equal(code, 1);
    assert.deepEqual(messages, [
      String.raw`non-protocol stdout on line 1: "Available transports:\n" (${notJson('A')})`,
      String.raw`non-protocol stdout on line 2: "- stdio\n" (not JSON: invalid number at byte 0)`,
      String.raw`non-protocol stdout on line 3: "- sse\n" (not JSON: invalid number at byte 0)`,
      String.raw`non-protocol stdout on line 4: "- streamableHttp\n" (not JSON: invalid number at byte 0)`,
      'initialize: no response before the server exited',
      'shutdown: the server exited before stdin was closed (exit status 1)',
    ]);
    assert.deepEqual(
      run.violations.map((v) => [v.stream, v.kind, v.line ?? v.step ?? null]),
      [
        ['stdout', 'non_protocol', 1],
        ['stdout', 'non_protocol', 2],
        ['stdout', 'non_protocol', 3],
        ['stdout', 'non_protocol', 4],
        ['behaviour', 'unanswered', 'initialize'],
        ['behaviour', 'exited_early', null],
      ],
    );
    assert.deepEqual(
      run.steps.map((s) => s.outcome),
      ['gone', 'not_sent', 'not_sent'],
    );
    assert.deepEqual([run.exit.code, run.exit.how], [1, 'before_stdin_closed']);
    assert.equal(
      run.stderr.excerpt,
      [
        '-'.repeat(53),
        '  Everything Server Launcher',
        '  Usage: node ./index.js [stdio|sse|streamableHttp]',
        '  Default transport: stdio',
        '-'.repeat(53),
        'Unknown transport: bogus',
        '',
      ].join('\n'),
    );
  });
});

describe('exit status 2: could not run', () => {
  test('a bad option value names the option and the value', { timeout: 30000 }, async () => {
    for (const [args, message] of [
      [['--grace', 'soon', '--', 'true'], "--grace expects milliseconds (e.g. 5000, 250ms, 5s), got 'soon'"],
      [['--runs', '0', '--', 'true'], "--runs expects a whole number from 1 to 100, got '0'"],
      [['--env', 'NOVALUE', '--', 'true'], "--env expects KEY=VALUE, got 'NOVALUE'"],
      [['--call', 'x', '--args', '[1]', '--', 'true'], "--args expects a JSON object, got '[1]'"],
      [['--args', '{}', '--', 'true'], "--args needs --call NAME, got --args '{}' alone"],
      [
        ['--protocol-version', '2027-01-01', '--', 'true'],
        "--protocol-version expects one of auto, 2026-07-28, 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, got '2027-01-01'",
      ],
      [['--cwd', '/no/such/dir', '--', 'true'], "--cwd expects an existing directory, got '/no/such/dir'"],
      [['--verbose', '--', 'true'], 'unknown option --verbose (see mcpguard check --help)'],
      [['--'], 'no command to check: mcpguard check [options] -- <command> [args...]'],
    ]) {
      const r = await check(args);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stdout, '');
      assert.equal(r.stderr, `mcpguard check: ${message}\n`);
    }
  });

  test('command not found: a message on stderr; with --json also a report', { timeout: 30000 }, async () => {
    const t = await check(['--', 'mcpguard-no-such-server']);
    assert.equal(t.code, 2);
    assert.equal(t.stdout, '');
    assert.equal(t.stderr, 'mcpguard check: cannot start "mcpguard-no-such-server": command not found\n');
    const j = await checkJson(['--', 'mcpguard-no-such-server']);
    assert.equal(j.code, 2);
    assert.equal(j.report.result, 'could_not_run');
    assert.equal(j.run.error, 'cannot start "mcpguard-no-such-server": command not found');
  });

  test('--help prints the synopsis and exits 0', { timeout: 30000 }, async () => {
    const r = await check(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage:\n {2}mcpguard check \[options\] -- <command> \[args\.\.\.\]\n/);
    assert.match(r.stdout, /--start-timeout MS\n/);
  });
});

describe('the CI example', () => {
  // Each `mcpguard check` the workflow runs, run here as the job would run it: the installed
  // command is this checkout's bin, `my-mcp-server` a clean fixture (its tool is `add`, not `echo`).
  const workflow = readFileSync(join(ROOT, 'examples', 'ci', 'mcp-stdout-check.yml'), 'utf8');
  const steps = runSteps(workflow).filter((command) => command.includes('mcpguard check'));

  test('it installs mcpguard from $MCPGUARD_PACKAGE, never from the registry by name', { timeout: 10000 }, () => {
    assert.match(workflow, /run: npm install --global "\$MCPGUARD_PACKAGE"/);
    assert.doesNotMatch(workflow, /npx|npm install (--global|-g) mcpguard/);
    assert.doesNotMatch(workflow, /\t/);
    assert.equal(steps.length, 3, steps.join('\n'));
  });

  for (const [i, command] of steps.entries()) {
    test(`workflow step ${i}: ${command.slice(0, 60)}`, { timeout: 60000 }, () => {
      const tmp = mkdtempSync(join(tmpdir(), 'mcpguard-ci-'));
      try {
        const script = [
          `mcpguard() { ${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, 'bin', 'mcpguard.js'))} "$@"; }`,
          `my-mcp-server() { :; }`, // only ever a word after --, never run by the shell
          command
            .replace(/--call echo --args '\{"message":"hello"\}'/, `--call add --args '{"a":1,"b":2}'`)
            .replace(/-- my-mcp-server/, `-- python3 ${JSON.stringify(join(FIXTURES, 'check-server.py'))}`),
        ].join('\n');
        const run = spawnSync('bash', ['-ec', script], { cwd: tmp, env: { ...process.env, RUNNER_TEMP: tmp }, encoding: 'utf8', timeout: 50000 });
        assert.equal(run.status, 0, `${script}\n${run.stdout}\n${run.stderr}`);
        if (command.includes('--json')) {
          const report = JSON.parse(readFileSync(join(tmp, 'mcpguard-check.json'), 'utf8').trim().split('\n').pop());
          assert.equal(typeof report, 'object');
        }
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    });
  }
});

/** The commands of a workflow's `run:` steps: a `|` block keeps its lines, a `>` block is folded into one. */
function runSteps(yaml) {
  const lines = yaml.split('\n');
  const commands = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)(?:- )?run: ?(.*)$/.exec(lines[i]);
    if (m === null) continue;
    if (m[2] !== '|' && m[2] !== '>') {
      commands.push(m[2]);
      continue;
    }
    const body = [];
    while (i + 1 < lines.length && (lines[i + 1].trim() === '' || lines[i + 1].search(/\S/) > m[1].length)) body.push(lines[++i].trim());
    commands.push(body.filter((l) => l !== '').join(m[2] === '|' ? '\n' : ' '));
  }
  return commands;
}
