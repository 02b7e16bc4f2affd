// How `mcpguard activity` and `mcpguard show` present a person's approval:
// the card's answer (who answered, the scope, when) and the calls a session
// grant allowed without a card. A hostile client's own word for its answer
// (an action no spec names, with escapes, bidi controls and a secret of
// mcpguard's environment) is masked in the records and written out on the
// terminal. The session is a real one: mcpguard in front of the gate fixture,
// driven line by line.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PLANTED_ENV, assertNoPlanted, assertNoPlantedInRecords, fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';

const TIMEOUT = 30000;
after(killStarted);

test('activity and show: the card answered with a grant, the calls the grant allowed, and a hostile answer written out and masked', {
  timeout: TIMEOUT,
}, async () => {
  const scratch = tempDir('mcpguard-approvals-view-');
  const policy = join(scratch.dir, 'policy.json');
  writeFileSync(
    policy,
    JSON.stringify({
      default: 'allow',
      rules: [
        { tool: 'delete_file', decision: 'ask' },
        { tool: 'exec', decision: 'ask' },
      ],
    }),
  );
  const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${policy}`]);
  try {
    c.send({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } },
    });
    await c.waitFor((m) => m.id === 'init', 'initialize answer');
    c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const cards = () => c.out().filter((m) => m.method === 'elicitation/create');
    const answerNext = async (n, result) => {
      await c.waitFor(() => cards().length >= n, `card ${n}`);
      c.send({ jsonrpc: '2.0', id: cards()[n - 1].id, result });
    };
    c.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_file', arguments: { path: '/tmp/1' } } });
    await answerNext(1, { action: 'accept', content: { scope: 'session-tool' } });
    await c.waitFor((m) => m.id === 1, 'answer to 1');
    c.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_file', arguments: { path: '/tmp/2' } } });
    await c.waitFor((m) => m.id === 2, 'answer to 2');
    c.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'exec', arguments: { command: 'ls' } } });
    const hostile = `no\u001b[2J\u202e ${PLANTED_ENV.MCPGUARD_TEST_API_TOKEN}`;
    await answerNext(2, { action: hostile });
    const three = await c.waitFor((m) => m.id === 3, 'answer to 3');
    assert.equal(three.result.isError, true);
    const r = await c.finish();
    assert.equal(cards().length, 2, 'no card for the granted call');
    assertNoPlantedInRecords(c.recordDir);
    const [one, two, denied] = [1, 2, 3].map((id) => endOf(r.records, id));
    assert.equal(two.decision.grant.call_id, one.call_id);
    assert.match(denied.decision.card.answer, /^no\u001b\[2J\u202e \[REDACTED/, 'the answer is kept as given, the secret masked');
    const session = r.records[0].log_id;

    const table = await runGuard(['activity', session, '--record-dir', c.recordDir]).done;
    assert.equal(table.code, 0, table.stderr.toString());
    const text = table.stdout.toString();
    assert.match(text, /approval card: accept \(session-tool\), through the client's elicitation/);
    assert.match(text, new RegExp(`allowed without a card: the session-tool grant of call ${one.call_id} \\(answered through the client's elicitation\\)`));
    assert.match(text, /approval card: no\\x1b\[2J\\u202e \[REDACTED/, 'the hostile answer written out on the terminal');
    assert.doesNotMatch(text, /[\u001b\u202e]/);
    assertNoPlanted(text, 'activity');

    const json = await runGuard(['activity', session, '--record-dir', c.recordDir, '--json']).done;
    const rows = json.stdout
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    const row = (call) => rows.find((x) => x.call_id === call.call_id);
    assert.deepEqual(row(one).approval, {
      by: 'approval',
      channel: 'elicitation',
      answer: 'accept',
      scope: 'session-tool',
      answered_at: one.decision.card.answered_at,
      grant_of: null,
    });
    assert.equal(row(two).approval.grant_of, one.call_id);
    assert.equal(row(two).approval.by, 'grant');

    const shown = await runGuard(['show', two.call_id, '--record-dir', c.recordDir]).done;
    assert.equal(shown.code, 0, shown.stderr.toString());
    assert.match(shown.stdout.toString(), /decision\.by\s+grant/);
    assert.match(
      shown.stdout.toString(),
      new RegExp(`decision\\.grant\\s+session-tool grant of call ${one.call_id} \\(elicitation, \\d{4}-\\d\\d-\\d\\d [0-9:.]+ `),
    );
    const shownDenied = await runGuard(['show', denied.call_id, '--record-dir', c.recordDir]).done;
    assert.doesNotMatch(shownDenied.stdout.toString(), /[\u001b\u202e]/);
    assertNoPlanted(shownDenied.stdout, 'show');
  } finally {
    c.cleanup();
    scratch.cleanup();
  }
});
