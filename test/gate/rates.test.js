// Rate rules: `limit: {calls, per}` counted per tool per rule per session, a
// sliding window over the times of the last N dispatches. The window is
// driven with a fake clock through the relay's own decide() and RateBook;
// then through the real binary: the third call of a 2-per-hour tool is
// denied, says when calls are allowed again, and leaves zero bytes at a
// server that records every line it reads.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { openWire } from '../session/restart-wire.js';
import { buildPolicy, decide } from '../../dist/gate/policy.js';
import { RateBook } from '../../dist/gate/rates.js';

after(killStarted);

const TIMEOUT = 30000;
const noEngine = () => {
  throw new Error('no engine');
};
const args = { value: () => ({}) };

describe('limit: the window, with a fake clock', () => {
  test('3 calls per 1m: the 4th within the minute is denied with when the next is allowed; the window slides', () => {
    let now = 0;
    const book = new RateBook(() => now);
    const p = buildPolicy(
      {
        rules: [
          { tool: 'shell', limit: { calls: 3, per: '1m' }, decision: 'deny' },
          { tool: 'shell', decision: 'ask' },
        ],
      },
      'x',
      noEngine,
    );
    /** What decide() says, and (as the gate does when it lets a call go) the slots taken. */
    const call = () => {
      const v = decide(p, 'shell', args, {}, { rates: book });
      if (v.decision !== 'deny') assert.equal(book.take(v.counts, []), null);
      return v;
    };
    for (const t of [0, 10_000, 20_000]) {
      now = t;
      const v = call();
      assert.deepEqual([v.decision, v.rule], ['ask', 1], 'below the limit the rule does not match: evaluation goes on');
      assert.deepEqual(
        v.counts.map((c) => c.rule),
        [0],
      );
    }
    now = 30_000;
    const over = call();
    assert.deepEqual([over.decision, over.rule], ['deny', 0]);
    assert.equal(over.reason, '3 calls per 1m to "shell": next allowed in 30 s');
    assert.equal(over.counts, undefined, 'a denied call counts against nothing');
    now = 59_999;
    assert.equal(call().decision, 'deny', 'the denial used up nothing: still the first three in the window');
    now = 60_000;
    assert.equal(call().decision, 'ask', 'the call of t=0 left the window at t=60 s');
    assert.equal(call().decision, 'deny', 'and the one just dispatched took its place');
    now = 69_000;
    assert.match(call().reason, /next allowed in 1 s$/, 't=10 s leaves the window at 70 s');
    now = 70_000;
    assert.equal(call().decision, 'ask');
  });

  test('counted per tool and per rule; a slot is given back by a call that never reached the server; memory stays N per window', () => {
    let now = 0;
    const book = new RateBook(() => now);
    const p = buildPolicy(
      {
        rules: [
          { tool: '*', limit: { calls: 2, per: '1h' }, decision: 'deny', reason: 'slow down' },
          { tool: 'a', limit: { calls: 1, per: '30s' }, decision: 'ask' },
        ],
      },
      'x',
      noEngine,
    );
    const taken = [];
    const a1 = decide(p, 'a', args, {}, { rates: book });
    assert.deepEqual(
      a1.counts.map((c) => c.rule),
      [0, 1],
      'a call counts against every limit it passed',
    );
    assert.equal(book.take(a1.counts, taken), null);
    const a2 = decide(p, 'a', args, {}, { rates: book });
    assert.deepEqual([a2.decision, a2.rule, a2.reason], ['ask', 1, '1 call per 30s to "a": next allowed in 30 s']);
    const b = decide(p, 'b', args, {}, { rates: book });
    assert.equal(b.decision, 'allow', 'another tool has its own window');
    book.release(taken);
    assert.equal(decide(p, 'a', args, {}, { rates: book }).decision, 'allow', 'released: as if the call had never been let go');
    assert.equal(book.take(decide(p, 'a', args, {}, { rates: book }).counts, []), null);
    now = 31_000;
    assert.equal(book.take(decide(p, 'a', args, {}, { rates: book }).counts, []), null, "rule 2's window has room again; rule 1's takes a second call");
    const third = decide(p, 'a', args, {}, { rates: book });
    assert.deepEqual([third.decision, third.rule], ['deny', 0]);
    assert.equal(third.reason, 'slow down; 2 calls per 1h to "a": next allowed in 3569 s');
    // take() refuses a full window (a call that waited for a person while others went): nothing is taken then.
    const full = book.take([{ rule: 0, tool: 'a', limit: p.rules[0].limit }], []);
    assert.equal(full.count.rule, 0);
    assert.ok(full.waitMs > 0);
    // Many tools: empty windows are swept, so memory follows the tools called within their window.
    for (let i = 0; i < 3000; i++) {
      now += 31_000;
      book.take([{ rule: 1, tool: `t${i}`, limit: p.rules[1].limit }], []);
    }
    assert.ok(book.size <= 1025, `windows kept: ${book.size}`);
  });

  test('decide() without a session is a fresh one: no limit is reached (what policy test evaluates)', () => {
    const p = buildPolicy({ rules: [{ tool: 'shell', limit: { calls: 1, per: '1h' }, decision: 'deny' }] }, 'x', noEngine);
    for (let i = 0; i < 3; i++) assert.equal(decide(p, 'shell', args, {}).decision, 'allow');
  });

  test('checked at load: calls a whole number from 1, per a duration, a decision that asks or denies; errors name the rule and the value', () => {
    const load = (rule) => () => buildPolicy({ rules: [{ tool: 'x', decision: 'deny' }, rule] }, "'p.json'", noEngine);
    const cases = [
      [
        { tool: 's', limit: { calls: 0, per: '1m' }, decision: 'deny' },
        /policy 'p\.json': rule 2: "limit"\."calls" must be a whole number from 1 to 100000, got 0/,
      ],
      [{ tool: 's', limit: { calls: 1.5, per: '1m' }, decision: 'deny' }, /rule 2: "limit"\."calls" .* got 1\.5/],
      [{ tool: 's', limit: { calls: '3', per: '1m' }, decision: 'deny' }, /rule 2: "limit"\."calls" .* got "3"/],
      [{ tool: 's', limit: { per: '1m' }, decision: 'deny' }, /rule 2: "limit"\."calls" .* got null/],
      [{ tool: 's', limit: { calls: 3, per: '1 minute' }, decision: 'deny' }, /rule 2: "limit"\."per" must be a duration .* got "1 minute"/],
      [{ tool: 's', limit: { calls: 3, per: '0s' }, decision: 'deny' }, /rule 2: "limit"\."per" must be a duration .* got "0s"/],
      [{ tool: 's', limit: { calls: 3, per: 60 }, decision: 'deny' }, /rule 2: "limit"\."per" must be a duration .* got 60/],
      [{ tool: 's', limit: { calls: 3, per: '30d' }, decision: 'deny' }, /rule 2: "limit"\."per" .* \(at most 24 days\), got "30d"/],
      [{ tool: 's', limit: { calls: 3, per: '1m', burst: 2 }, decision: 'deny' }, /rule 2: "limit": unknown key "burst"/],
      [{ tool: 's', limit: [3, '1m'], decision: 'deny' }, /rule 2: "limit" must be an object/],
      [{ tool: 's', limit: { calls: 3, per: '1m' }, decision: 'allow' }, /rule 2: a rule with "limit" may only ask or deny/],
      [{ tool: 's', limit: { calls: 3, per: '1m' } }, /rule 2: "decision" must be one of allow, ask, deny, got null/],
    ];
    for (const [rule, message] of cases) assert.throws(load(rule), message, JSON.stringify(rule));
    for (const per of ['250ms', '30s', '1m', '1h', '1d']) load({ tool: 's', limit: { calls: 3, per }, decision: 'ask' })();
  });
});

describe('through the relay', () => {
  test('calls: 2 per 1h: the third tools/call is denied saying when, zero bytes at the server; a refused call used nothing up', {
    timeout: TIMEOUT,
  }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ rules: [{ tool: 'echo', limit: { calls: 2, per: '1h' }, decision: 'deny' }] }));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${policyFile}`]);
    const call = (id, text) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
    try {
      await c.initialize();
      // Sent before mcpguard knows the tools: all wait for its tools/list, then are let go in order. 1 is refused by
      // the schema (text must be a string) and counts nothing; 2 and 3 take the two slots; 4 finds them taken.
      c.send(call(1, 5), call(2, 'one'), call(3, 'two'), call(4, 'three'));
      const answers = {};
      for (const id of [1, 2, 3, 4]) answers[id] = (await c.waitFor((m) => m.id === id, `answer to ${id}`)).result;
      c.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'delete_file', arguments: { path: '/x' } } });
      await c.waitFor((m) => m.id === 5, 'answer to 5');
      // Decided at once (the tools are known): over the limit, by the rule.
      c.send(call(6, 'four'));
      answers[6] = (await c.waitFor((m) => m.id === 6, 'answer to 6')).result;
      const r = await c.finish();
      const reached = c.callsAtServer();
      assert.deepEqual(reached, [2, 3, 5], 'the call over the limit left zero bytes at the server; another tool is not limited');
      assert.equal(answers[1].isError, true);
      assert.equal(answers[2].isError, undefined);
      assert.equal(answers[4].isError, true);
      assert.match(
        answers[4].content[0].text,
        /denied by policy rule 1 \(2 calls per 1h to "echo": next allowed in 3[56][0-9]{2} s; reached while the call waited\)$/,
      );
      assert.match(
        answers[6].content[0].text,
        /^mcpguard denied this call before it reached the server: denied by policy rule 1 \(2 calls per 1h to "echo": next allowed in 3[56][0-9]{2} s\)$/,
      );
      assert.deepEqual(answers[6]._meta['io.mcpguard/refused'], { source: 'mcpguard', state: 'denied', by: 'policy', rule: 0 });
      const end = endOf(r.records, 6);
      assert.equal(end.state, 'denied');
      assert.equal(end.decision.rule, 0);
      assert.match(end.decision.reason, /2 calls per 1h to "echo": next allowed in/);
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });
});

describe('through the relay: who counts, and for how long', () => {
  test('a call a person refused uses nothing up, an approved one counts; past the limit it is denied without asking', { timeout: TIMEOUT }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    const rules = [
      { tool: 'delete_file', limit: { calls: 1, per: '1h' }, decision: 'deny', reason: 'one delete an hour' },
      { tool: 'delete_file', decision: 'ask' },
    ];
    writeFileSync(policyFile, JSON.stringify({ rules }));
    // approve.py approves deleting under /tmp only.
    const c = conversation(
      ['python3', fixture('gate-server.py')],
      ['--validate-args=on', `--policy=${policyFile}`, `--approve-cmd=python3 ${fixture('approve.py')}`],
    );
    const del = (id, path) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'delete_file', arguments: { path } } });
    try {
      await c.initialize();
      const answers = {};
      for (const [id, path] of [
        [1, '/etc/passwd'],
        [2, '/tmp/a'],
        [3, '/tmp/b'],
      ]) {
        c.send(del(id, path));
        answers[id] = (await c.waitFor((m) => m.id === id, `answer to ${id}`)).result;
      }
      const r = await c.finish();
      const reached = c.callsAtServer();
      assert.deepEqual(reached, [2]);
      assert.match(answers[1].content[0].text, /not approved/);
      assert.equal(answers[2].isError, undefined);
      assert.match(answers[3].content[0].text, /denied by policy rule 1 \(one delete an hour; 1 call per 1h to "delete_file": next allowed in \d+ s\)$/);
      assert.deepEqual([endOf(r.records, 3).decision.by, endOf(r.records, 3).decision.channel], ['policy', null], 'not asked');
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });

  test('2026-07-28: a retry whose window filled while its card waited is denied by the limit; the window counts the retry, not the card', {
    timeout: TIMEOUT,
  }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    const rules = [
      { tool: 'delete_file', limit: { calls: 1, per: '1h' }, decision: 'deny' },
      { tool: 'delete_file', decision: 'ask' },
    ];
    writeFileSync(policyFile, JSON.stringify({ rules }));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${policyFile}`]);
    const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
    const accept = { 'io.mcpguard/approval': { action: 'accept', content: {} } };
    const del = (id, path, extra = {}) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'delete_file', arguments: { path }, ...extra, _meta: META },
    });
    const answer = async (id) => (await c.waitFor((m) => m.id === id, `answer to ${id}`)).result;
    try {
      c.send(del(1, '/tmp/a'));
      const cardA = await answer(1);
      c.send(del(2, '/tmp/b'));
      const cardB = await answer(2);
      assert.deepEqual([cardA.resultType, cardB.resultType], ['input_required', 'input_required'], 'cards take no slot');
      c.send(del(3, '/tmp/a', { inputResponses: accept, requestState: cardA.requestState }));
      assert.equal((await answer(3)).resultType, 'complete');
      c.send(del(4, '/tmp/b', { inputResponses: accept, requestState: cardB.requestState }));
      const four = await answer(4);
      assert.match(four.content[0].text, /denied by policy rule 1 \(1 call per 1h to "delete_file": next allowed in \d+ s; reached while the call waited\)$/);
      c.send(del(5, '/tmp/c'));
      assert.match(
        (await answer(5)).content[0].text,
        /denied by policy rule 1 \(1 call per 1h to "delete_file": next allowed in \d+ s\)$/,
        'no card past the limit',
      );
      await c.finish();
      const reached = c.callsAtServer();
      assert.deepEqual(reached, [3]);
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });

  test('a restart of the server (--restart) does not reset the window: it lives with the session', { timeout: 60000 }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ rules: [{ tool: 'echo', limit: { calls: 2, per: '1h' }, decision: 'deny' }] }));
    const wire = openWire([`--policy=${policyFile}`, '--restart', 'on-failure', '--restart-delay', '100ms']);
    try {
      await wire.initialize();
      assert.equal((await wire.tool('echo', { text: 'a' })).result.isError, undefined);
      assert.equal((await wire.tool('crash', { code: 3 })).error.data.state, 'unknown_after_dispatch');
      const b = await wire.tool('echo', { text: 'b' });
      assert.match(b.result.content[0].text, /^gen 2 .*: b$/);
      const c = await wire.tool('echo', { text: 'c' });
      assert.match(c.result.content[0].text, /denied by policy rule 1 \(2 calls per 1h to "echo": next allowed in \d+ s\)$/);
      const { code } = await wire.close();
      assert.equal(code, 0);
      const echoes = wire.lines().filter((e) => e.message?.method === 'tools/call' && e.message.params.name === 'echo');
      assert.deepEqual(
        echoes.map((e) => [e.gen, e.message.params.arguments.text]),
        [
          [1, 'a'],
          [2, 'b'],
        ],
      );
    } finally {
      wire.cleanup();
      t.cleanup();
    }
  });
});

describe('mcpguard policy test', () => {
  test('lists the limits a call would count in, and says a fresh session reaches none', { timeout: TIMEOUT }, async () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'p.json');
      writeFileSync(file, JSON.stringify({ default: 'ask', rules: [{ tool: 'shell', limit: { calls: 3, per: '1m' }, decision: 'deny' }] }));
      const json = await runGuard(['policy', 'test', file, '--tool', 'shell', '--json'], { timeout: TIMEOUT }).done;
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual(JSON.parse(json.stdout), {
        decision: 'ask',
        rule: null,
        reason: null,
        why: "the policy's default is ask",
        counts_in: [{ rule: 0, calls: 3, per: '1m' }],
      });
      const text = await runGuard(['policy', 'test', file, '--tool', 'shell'], { timeout: TIMEOUT }).done;
      assert.equal(
        text.stdout.toString(),
        'ask: the policy\'s default is ask\ncounts in: policy rule 1, 3 calls per 1m to "shell" (not reached: policy test evaluates one call in a fresh session)\n',
      );
    } finally {
      t.cleanup();
    }
  });
});
