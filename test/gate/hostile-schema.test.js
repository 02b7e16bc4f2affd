// Tool schemas written to hurt the validator, through the real binary: a
// pattern that backtracks exponentially (in `pattern` and as a
// patternProperties key), uniqueItems over many items, and numbers a double
// cannot hold. The server (a Python fixture) records every byte it reads and
// floods its stderr, so a refused call is shown to leave nothing there, and
// a check that held the main thread would be seen as every other call (and
// the stderr drain) waiting behind it.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, killStarted } from '../helpers/run.js';
import { conversation } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 60000;
const SERVER = ['python3', fixture('hostile-schema-server.py')];
const init = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
/** A tools/call line written by hand, so numbers keep every digit. */
const callLine = (id, name, args) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(name)},"arguments":${args}}}\n`;
const calledAtServer = (c) => c.callsAtServer();
const textOf = (m) => m.result.content[0].text;
const pongs = (m) => Number(/^pong (\d+)$/.exec(textOf(m))[1]);

async function session(env = {}) {
  const c = conversation(SERVER, ['--validate-args=on'], { STDERR_FLOOD: '1', ...env });
  c.send(init);
  await c.waitFor((m) => m.id === 'init', 'initialize answer');
  c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return c;
}

describe('a pattern that backtracks exponentially', () => {
  test('pattern and patternProperties: the bomb is judged at once (refused, zero bytes), a call beside it is answered, stderr keeps draining', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session();
    try {
      const bomb = `${'a'.repeat(40)}!`;
      c.send(call(1, 'match', { name: bomb }), call(2, 'ping', {}), call(3, 'keys', { [bomb]: 1 }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to the bomb');
      const two = await c.waitFor((m) => m.id === 2, 'answer to the ping beside it');
      const three = await c.waitFor((m) => m.id === 3, 'answer to the key bomb');
      assert.equal(one.result.isError, true);
      assert.match(textOf(one), /Invalid arguments for tool "match".*\n- \/name: pattern: must match the pattern "\^\(a\+\)\+\$"/);
      assert.match(textOf(three), /Invalid arguments for tool "keys"/);
      c.send(call(4, 'match', { name: 'a'.repeat(100000) }), call(5, 'keys', { aaa: 1 }), call(6, 'ping', {}));
      const four = await c.waitFor((m) => m.id === 4, 'answer to 4');
      assert.equal(four.result.isError, undefined, 'a long string that matches is checked and sent');
      await c.waitFor((m) => m.id === 5, 'answer to 5');
      const six = await c.waitFor((m) => m.id === 6, 'answer to 6');
      assert.ok(pongs(six) > pongs(two), `the server's stderr was drained meanwhile (${pongs(two)} then ${pongs(six)} bytes written)`);
      await c.finish();
      assert.deepEqual(calledAtServer(c), [2, 4, 5, 6], 'the refused calls never reached the server');
    } finally {
      c.cleanup();
    }
  });

  test('a pattern RE2 cannot run (a lookahead) runs on V8 under a time budget: the bomb is refused as not checkable, a call beside it is answered', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session();
    try {
      c.send(call(1, 'ahead', { name: `${'a'.repeat(40)}!` }), call(2, 'ping', {}), call(3, 'ahead', { name: 'aaa' }), call(4, 'ahead', { name: 'baa' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to the bomb');
      await c.waitFor((m) => m.id === 2, 'answer to the ping');
      const three = await c.waitFor((m) => m.id === 3, 'answer to 3');
      const four = await c.waitFor((m) => m.id === 4, 'answer to 4');
      assert.match(
        textOf(one),
        /- \(root\): pattern: a pattern RE2 cannot run \(it uses a lookaround, which RE2 cannot match\) took more than mcpguard's bound/,
      );
      assert.equal(textOf(three), "{'name': 'aaa'}");
      assert.match(textOf(four), /- \/name: pattern: must match/);
      await c.finish();
      assert.deepEqual(calledAtServer(c), [2, 3]);
    } finally {
      c.cleanup();
    }
  });

  test('a string too large to match within the bound is refused as not checkable, saying so', { timeout: TIMEOUT }, async () => {
    const c = await session();
    try {
      c.send(call(1, 'match', { name: 'a'.repeat(4 * 1024 * 1024) }), call(2, 'ping', {}));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1', 20000);
      await c.waitFor((m) => m.id === 2, 'answer to 2', 20000);
      assert.match(textOf(one), /matching its patterns would take more than mcpguard's bound/);
      await c.finish();
      assert.deepEqual(calledAtServer(c), [2]);
    } finally {
      c.cleanup();
    }
  });
});

describe('uniqueItems over many items', () => {
  test('20,000 distinct objects pass without the pairwise loop; a repeat among them is refused as not checkable; a small repeat is invalid', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session();
    try {
      const items = Array.from({ length: 20000 }, (_, i) => ({ k: i, v: 'same prefix '.repeat(4) }));
      c.send(
        call(1, 'tags', { tags: items }),
        call(2, 'tags', { tags: [...items, { v: items[5].v, k: 5 }] }),
        call(3, 'tags', { tags: [1, { a: 1, b: 2 }, { b: 2, a: 1 }] }),
      );
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      const three = await c.waitFor((m) => m.id === 3, 'answer to 3');
      assert.equal(one.result.isError, undefined);
      assert.match(textOf(two), /an array of 20001 items repeats an item, and is too large to check against uniqueItems/);
      assert.match(textOf(three), /- \/tags: uniqueItems/);
      await c.finish();
      assert.deepEqual(calledAtServer(c), [1]);
    } finally {
      c.cleanup();
    }
  });
});

describe('numbers a double cannot hold', () => {
  test('judged on the digits the server reads: a rounded const refuses the schema, multipleOf refuses a rounded integer, 1e400 is never an integer; exact ones pass', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session();
    try {
      c.child.stdin.write(
        callLine(1, 'exact', '{"id":9007199254740992}') +
          callLine(2, 'even', '{"m":9007199254740993}') +
          callLine(3, 'bounded', '{"x":1e400}') +
          callLine(4, 'bounded', '{"x":9007199254740993}') +
          callLine(5, 'even', '{"m":9007199254740994}') +
          callLine(6, 'bounded', '{"n":9007199254740993}') +
          callLine(7, 'bounded', '{"n":-0,"x":-0.0}'),
      );
      const answers = [];
      for (let id = 1; id <= 7; id++) answers[id] = await c.waitFor((m) => m.id === id, `answer to ${id}`);
      assert.match(textOf(answers[1]), /its inputSchema cannot be checked \(\/properties\/id\/const: holds an integer beyond ±\(2\^53 − 1\)/);
      assert.match(textOf(answers[2]), /- \(root\): number: argument \/m is an integer a double cannot hold exactly, and the schema has multipleOf/);
      assert.match(textOf(answers[3]), /- \(root\): number: argument \/x is a number beyond a double's range/);
      assert.equal(textOf(answers[4]), "{'x': 9007199254740993}", 'an exact integer type passes, and the server reads every digit');
      assert.equal(textOf(answers[5]), "{'m': 9007199254740994}");
      assert.match(textOf(answers[6]), /- \/n: maximum/, 'beyond a safe bound on both sides');
      assert.equal(textOf(answers[7]), "{'n': 0, 'x': -0.0}");
      await c.finish();
      assert.deepEqual(calledAtServer(c), [4, 5, 7]);
    } finally {
      c.cleanup();
    }
  });

  test('a policy `when`: an integer beyond 2^53 in it stops mcpguard at start; with multipleOf, a rounded argument is denied as undecidable', {
    timeout: TIMEOUT,
  }, async () => {
    const { tempDir, runGuard } = await import('../helpers/run.js');
    const { writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const scratch = tempDir();
    try {
      const bad = join(scratch.dir, 'bad.json');
      writeFileSync(bad, '{"rules":[{"tool":"ping","when":{"properties":{"id":{"const":12345678901234567890}}},"decision":"allow"}],"default":"deny"}');
      const r = await runGuard([`--policy=${bad}`, '--', 'true'], { timeout: TIMEOUT }).done;
      assert.equal(r.code, 125, r.stderr);
      assert.match(r.stderr, /rule 1: "when" is not a usable JSON Schema: \/properties\/id\/const: holds an integer beyond/);
      const odd = join(scratch.dir, 'odd.json');
      writeFileSync(odd, '{"rules":[{"tool":"ping","when":{"properties":{"id":{"multipleOf":2}}},"decision":"allow"}],"default":"deny"}');
      const c = conversation(SERVER, ['--validate-args=on', `--policy=${odd}`]);
      try {
        c.send(init);
        await c.waitFor((m) => m.id === 'init', 'initialize answer');
        c.child.stdin.write(callLine(1, 'ping', '{"id":9007199254740993}') + callLine(2, 'ping', '{"id":4}'));
        const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
        await c.waitFor((m) => m.id === 2, 'answer to 2');
        assert.match(textOf(one), /the policy could not decide: .*argument \/id is an integer a double cannot hold exactly/);
        await c.finish();
        assert.deepEqual(calledAtServer(c), [2]);
      } finally {
        c.cleanup();
      }
    } finally {
      scratch.cleanup();
    }
  });
});
