// Session names: `--name NAME` (checked up front), else the server's own
// name (serverInfo in the initialize result, or _meta serverInfo in the
// 2026-07-28 server/discover result), else the command's basename; in the
// records (session_start, a server_info record, session_end), the summary,
// and the NAME column of `sessions`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, frame, killStarted, runGuard, sessionEnd, tempDir } from '../helpers/run.js';

const TIMEOUT = 30_000;
const { dir: scratch, cleanup } = tempDir('mcpguard-names-');
after(() => {
  killStarted();
  cleanup();
});

const INIT = frame({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const MODERN_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
};

/** Run one session into its own record directory; its records and the summary line. */
async function session(name, args, input) {
  const records = join(scratch, name);
  const run = await runGuard([`--record-dir=${records}`, ...args], { input, timeout: TIMEOUT }).done;
  const file = readdirSync(records).find((f) => f.endsWith('.jsonl'));
  const lines = readFileSync(join(records, file), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  return { run, records, lines, of: (type) => lines.filter((r) => r.type === type), summary: sessionEnd(run.stderr.toString()) };
}

test("--name is recorded and wins over the server's own name", { timeout: TIMEOUT }, async () => {
  const s = await session('given', ['--name', 'my files', '--', 'python3', fixture('stdlib_server.py')], INIT);
  assert.equal(s.run.code, 0, s.run.stderr.toString());
  assert.equal(s.of('session_start')[0].name, 'my files');
  assert.deepEqual(
    s.of('server_info').map((r) => [r.name, r.from]),
    [['stdlib-server', 'initialize']],
  );
  const end = s.of('session_end')[0];
  assert.deepEqual([end.name, end.name_source, end.server_name], ['my files', 'option', 'stdlib-server']);
  assert.equal(s.summary.name, 'my files');
  const listed = await runGuard(['sessions', `--record-dir=${s.records}`, '--name', 'my*'], { timeout: TIMEOUT }).done;
  assert.match(listed.stdout.toString(), /^SESSION +NAME +START .*\ns_\S+ +my files +/);
});

test('without --name: the serverInfo name of the initialize result', { timeout: TIMEOUT }, async () => {
  const s = await session('server', ['--', 'python3', fixture('stdlib_server.py')], INIT);
  assert.equal(s.of('session_start')[0].name, undefined);
  const end = s.of('session_end')[0];
  assert.deepEqual([end.name, end.name_source], ['stdlib-server', 'server']);
  // The server_info record comes early enough for `sessions` to find it in a log without its end.
  assert.ok(s.lines.findIndex((r) => r.type === 'server_info') < 12);
  const shown = await runGuard(['show', `--record-dir=${s.records}`, 's_'], { timeout: TIMEOUT }).done;
  assert.match(shown.stdout.toString(), /^ {2}name +stdlib-server \(the server's serverInfo\)$/m);
});

test("2026-07-28: the serverInfo in the server/discover result's _meta", { timeout: TIMEOUT }, async () => {
  const discover = frame({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: MODERN_META } });
  const s = await session('modern', ['--', 'python3', fixture('check-modern-server.py')], discover);
  assert.deepEqual(
    s.of('server_info').map((r) => [r.name, r.version, r.from]),
    [['check-modern-server', '0.1', 'server/discover']],
  );
  assert.equal(s.of('session_end')[0].name, 'check-modern-server');
});

test("no serverInfo: the command's basename", { timeout: TIMEOUT }, async () => {
  const s = await session('basename', ['--', 'sh', '-c', 'exit 0'], '');
  assert.deepEqual(s.of('server_info'), []);
  const end = s.of('session_end')[0];
  assert.deepEqual([end.name, end.name_source], ['sh', 'command']);
});

test('a bad --name is refused before the server starts: exit 125 naming the option and the value', { timeout: TIMEOUT }, async () => {
  const marker = join(scratch, 'started');
  const config = join(scratch, 'config.json');
  writeFileSync(config, JSON.stringify({ name: '   ' }));
  for (const [args, message] of [
    [['--name', ''], /--name expects a name of 1 to 64 printable characters, got "" \(it is empty\)/],
    [['--name', 'x'.repeat(65)], /--name expects a name of 1 to 64 printable characters, got "x{65}" \(it is longer than 64 characters\)/],
    [['--name', 'evil\u001b[2Jname'], /--name expects a name of 1 to 64 printable characters, got "evil\\u001b\[2Jname" \(it holds a control character\)/],
    [['--name', 'two\nlines'], /got "two\\nlines" \(it holds a control character\)/],
    [['--config', config], /--config '.*config.json' key "name" expects a name of 1 to 64 printable characters, got " {3}" \(it is empty\)/],
  ]) {
    const run = await runGuard([`--record-dir=${join(scratch, 'refused')}`, ...args, '--', 'sh', '-c', `touch ${marker}`], { timeout: TIMEOUT }).done;
    assert.equal(run.code, 125, args.join(' '));
    assert.match(run.stderr.toString(), message);
    assert.throws(() => readFileSync(marker), /ENOENT/, 'the server never started');
  }
  // 64 characters, spaces and non-ASCII letters are fine.
  const fine = await session('fine', ['--name', `café ${'y'.repeat(59)}`, '--', 'sh', '-c', 'exit 0'], '');
  assert.equal(fine.of('session_start')[0].name, `café ${'y'.repeat(59)}`);
});
