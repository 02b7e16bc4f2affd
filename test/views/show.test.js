// `mcpguard show SESSION`: real sessions (a server that exits 3 after a fatal
// line on stderr, one that ignores SIGTERM and is killed, one whose mcpguard
// is SIGKILLed, one with a tool call), then shown by id prefix, by the log's
// path and as JSON; a call by a prefix of its id.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, fixture, frame, killStarted, runGuard, tempDir } from '../helpers/run.js';

const TIMEOUT = 30_000;
const { dir: scratch, cleanup } = tempDir('mcpguard-show-');
const records = join(scratch, 'records');
const children = new Set();
after(() => {
  for (const child of children) child.kill('SIGKILL');
  killStarted();
  cleanup();
});

const show = (...args) => runGuard(['show', `--record-dir=${records}`, ...args], { timeout: TIMEOUT }).done;
const newLog = (before) => readdirSync(records).filter((f) => f.endsWith('.jsonl') && !before.includes(f))[0];
const ids = {};

before(
  async () => {
    let seen = [];
    const fatal = await runGuard([`--record-dir=${records}`, '--', 'sh', '-c', 'echo "fatal: out of cheese" >&2; exit 3'], { timeout: TIMEOUT }).done;
    assert.equal(fatal.code, 3, fatal.stderr);
    ids.fatal = newLog(seen).replace(/\.jsonl$/, '');
    seen = readdirSync(records);
    const stubborn = await runGuard(
      [`--record-dir=${records}`, '--grace=200', '--', 'sh', '-c', 'trap "" TERM; echo "starting up" >&2; sleep 20 & wait; wait'],
      { timeout: TIMEOUT },
    ).done;
    assert.equal(stubborn.code, 137, stubborn.stderr);
    ids.stubborn = newLog(seen).replace(/\.jsonl$/, '');
    seen = readdirSync(records);
    const called = await runGuard([`--record-dir=${records}`, '--', 'python3', fixture('recorder.py')], {
      input: frame({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'record', arguments: { v: 1 } } }),
      env: { RECORD_ACTIONS: join(scratch, 'actions') },
      timeout: TIMEOUT,
    }).done;
    assert.equal(called.code, 0, called.stderr);
    ids.called = newLog(seen).replace(/\.jsonl$/, '');
    seen = readdirSync(records);
    // An mcpguard killed mid-session: no session record, no seal. Its child (cat) ends at the EOF of its stdin.
    const killed = spawn(process.execPath, [BIN, `--record-dir=${records}`, '--', 'sh', '-c', 'cat > /dev/null'], { stdio: ['pipe', 'ignore', 'ignore'] });
    children.add(killed);
    for (let i = 0; i < 200 && newLog(seen) === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    await new Promise((resolve) => setTimeout(resolve, 300)); // its session_start is written
    killed.kill('SIGKILL');
    await new Promise((resolve) => killed.on('close', resolve));
    children.delete(killed);
    ids.killed = newLog(seen).replace(/\.jsonl$/, '');
  },
  { timeout: 120_000 },
);

const field = (text, name) => new RegExp(`^ {2}${name} +(.*)$`, 'm').exec(text)?.[1];

test('show SESSION by a unique prefix: how it ran and ended, the stderr tail, the calls', { timeout: TIMEOUT }, async () => {
  const fatal = await show(ids.fatal.slice(0, 24));
  assert.equal(fatal.code, 0, fatal.stderr);
  const out = fatal.stdout.toString();
  assert.match(out, new RegExp(`^session ${ids.fatal}  \\S+${ids.fatal}\\.jsonl$`, 'm'));
  assert.equal(field(out, 'command'), 'sh -c echo "fatal: out of cheese" >&2; exit 3');
  assert.equal(field(out, 'end reason'), 'child_exit');
  assert.equal(field(out, 'exit'), 'code 3, mcpguard exit status 3');
  assert.equal(field(out, 'signals sent'), 'none');
  assert.equal(field(out, 'forced kill'), 'no');
  assert.equal(field(out, 'survivors'), 'none');
  assert.match(field(out, 'stderr'), /^21 bytes seen: 0 during calls, 21 outside calls \(21 kept\), /);
  assert.equal(field(out, 'records'), '5, sealed');
  assert.match(out, /^ {2}stderr tail:\n(?: {4}\| .*\n)*? {4}\| fatal: out of cheese$/m);

  const stubborn = (await show(ids.stubborn)).stdout.toString();
  assert.equal(field(stubborn, 'exit'), 'signal SIGKILL, mcpguard exit status 137');
  assert.equal(field(stubborn, 'signals sent'), 'SIGTERM, SIGKILL');
  assert.equal(field(stubborn, 'forced kill'), 'yes');
  assert.match(stubborn, /^ {4}\| starting up$/m);

  const called = (await show(ids.called)).stdout.toString();
  assert.match(field(called, 'calls'), /^1: completed 1$/);
  assert.equal(field(called, 'rejected'), '0 (from the client 0, from the server 0)');
});

test('show SESSION of a killed mcpguard: no session record, not sealed', { timeout: TIMEOUT }, async () => {
  const r = await show(ids.killed);
  assert.equal(r.code, 0, r.stderr);
  const out = r.stdout.toString();
  assert.match(field(out, 'ended'), /^crashed: mcpguard \(pid \d+\) is gone and wrote no session record$/);
  assert.match(field(out, 'records'), /^\d+, not sealed$/);
  assert.equal(field(out, 'command'), 'sh -c cat > /dev/null');
});

test('show by the log file path that activity prints, and --json: the session_start and session_end records', { timeout: TIMEOUT }, async () => {
  const path = join(records, `${ids.fatal}.jsonl`);
  const activity = await runGuard(['activity', `--record-dir=${records}`, ids.fatal], { timeout: TIMEOUT }).done;
  assert.ok(activity.stdout.toString().split('\n')[0].endsWith(`  ${path}`));
  const byPath = await show(path);
  assert.equal(byPath.code, 0, byPath.stderr);
  assert.equal(byPath.stdout.toString(), (await show(ids.fatal)).stdout.toString());
  const json = await show('--json', ids.fatal);
  const recordsOut = json.stdout
    .toString()
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  const file = readFileSync(path, 'utf8')
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    recordsOut,
    file.filter((r) => r.type === 'session_start' || r.type === 'session_end'),
  );
  assert.equal(recordsOut[1].exit_code, 3);
});

test('show CALL by a prefix of its id; an ambiguous or unknown prefix exits 1 and says why', { timeout: TIMEOUT }, async () => {
  const text = readFileSync(join(records, `${ids.called}.jsonl`), 'utf8');
  const callId = /"call_id":"(c_[0-9a-f]+)"/.exec(text)[1];
  const r = await show(callId.slice(0, 7));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout.toString(), new RegExp(`^call ${callId} in session ${ids.called}`));
  assert.match(r.stdout.toString(), /^ {2}state +completed$/m);
  const ambiguous = await show('s_2');
  assert.equal(ambiguous.code, 1);
  assert.match(ambiguous.stderr, /'s_2' matches 4 sessions; give more of the id/);
  const unknown = await show('c_ffffffffffff0');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no call 'c_ffffffffffff0'/);
  const missingFile = await show(join(scratch, 'nope.jsonl'));
  assert.equal(missingFile.code, 1);
  assert.match(missingFile.stderr, /cannot read '.*nope\.jsonl': /);
});
