// The README's examples, run as the README runs them: the banner server behind
// mcpguard, and the "2 a.m." walkthrough (sessions, activity, show, logs) on the
// hanging server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BIN, killStarted, ROOT, runCommand, runGuard, sessionEnd, tempDir } from '../helpers/run.js';

const EXAMPLES = join(ROOT, 'examples');
const temps = [];
after(() => {
  killStarted();
  for (const t of temps) t.cleanup();
});

test('banner-server: the banner is diverted, stdout carries exactly the three responses', { timeout: 30000 }, async () => {
  const t = tempDir();
  temps.push(t);
  const input = readFileSync(join(EXAMPLES, 'session.jsonl'), 'utf8');
  // As the README runs it: mcpguard's defaults (the gate on), the whole session on stdin at once.
  const { code, stdout, stderr } = await runCommand(process.execPath, [BIN, '--record-dir', t.dir, '--', 'python3', join(EXAMPLES, 'banner-server.py')], {
    input,
  }).done;
  assert.equal(code, 0, stderr);
  const lines = stdout
    .toString('utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((m) => m.id),
    [1, 2, 3],
  );
  assert.equal(lines[2].result.content[0].text, '5');
  assert.equal(sessionEnd(stderr).calls.completed, 3, 'the call read before EOF was dispatched and answered');
  assert.match(stderr, /child stdout line 1 is not JSON-RPC: "loading optional extension"/);
  assert.equal(sessionEnd(stderr).stdout_noise_lines, 1);
});

test('hanging-server walkthrough: the hung call, its stderr and the tool error are in the views', { timeout: 60000 }, async () => {
  const t = tempDir();
  temps.push(t);
  const lines = readFileSync(join(EXAMPLES, 'hang.jsonl'), 'utf8').trim().split('\n');
  const run = runGuard(['--record-dir', t.dir, '--call-timeout', '2s', '--session-summary', 'off', '--', 'python3', join(EXAMPLES, 'hanging-server.py')], {
    keepOpen: true,
  });
  // One request at a time, as an agent that waits for each answer.
  let seen = '';
  let answered = 0;
  const waitAnswers = (n) =>
    new Promise((resolve) => {
      const check = () => {
        if (answered >= n) {
          run.child.stdout.off('data', onData);
          resolve();
        }
      };
      const onData = (chunk) => {
        seen += chunk;
        answered = seen.split('\n').length - 1;
        check();
      };
      run.child.stdout.on('data', onData);
      check();
    });
  let expected = 0;
  for (const line of lines) {
    run.child.stdin.write(`${line}\n`);
    if (JSON.parse(line).id !== undefined) await waitAnswers(++expected);
  }
  run.child.stdin.end();
  const { code } = await run.done;
  assert.equal(code, 0);
  const answers = seen
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(answers.find((m) => m.id === 4).error.data.state, 'timed_out_after_dispatch');

  const view = async (...args) => {
    const r = await runGuard([...args, '--record-dir', t.dir]).done;
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.toString('utf8');
  };
  const calls = (await view('activity', '--json'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const byId = new Map(calls.map((c) => [c.tool === null ? c.method : `${c.tool}:${c.state}`, c]));
  assert.ok(byId.has('lookup:completed'), JSON.stringify(calls));
  const hung = byId.get('lookup:timed_out_after_dispatch');
  assert.ok(hung, JSON.stringify(calls));
  assert.ok(byId.has('delete:tool_error'), JSON.stringify(calls));
  // The hung call's own stderr: the connection attempt, not the other calls' lines.
  const text = await view('logs', hung.call_id);
  assert.match(text, /connect\(\) to db-2:5432 is taking long/);
  assert.doesNotMatch(text, /orders found/);
  const session = await view('show', hung.call_id.slice(0, 6));
  assert.match(session, /timed_out_after_dispatch/);
});
