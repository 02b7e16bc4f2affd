// Large tools/call arguments through the real binary: the gate checks them
// against the server's inputSchema from their bytes (src/gate/schema/quick-bytes.ts)
// when the schema allows, and must decide exactly as the value path does. The
// server (a Python fixture) records every byte it reads, so a valid call can
// be shown to arrive byte for byte and a refused one to leave nothing there.
// Each refusal of a large call is compared with the refusal of a small call
// with the same fault, which takes the value path (it is below the size at
// which the gate reads bytes).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 60000;
const SERVER = ['python3', fixture('args-server.py')];
const init = {
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
};

/** About `size` bytes of JSON string body: ASCII, multibyte, astral, raw and escaped, quotes and backslashes. */
function body(size) {
  const pieces = ['plain text ', 'é数✓ ', '😀', '\\"quoted\\" ', '\\\\', '\\n', '\\t', '\\u00e9', '\\uD83D\\uDE00', '\\/'];
  const out = [];
  let bytes = 0;
  for (let i = 0; bytes < size; i++) {
    const piece = pieces[(i * 7) % pieces.length];
    out.push(piece);
    bytes += Buffer.byteLength(piece);
  }
  return out.join('');
}
const BIG = body(1024 * 1024);

/** A tools/call line written by hand (odd whitespace kept), with `args` as the arguments' JSON text. */
const callLine = (id, name, args) =>
  `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"tools/call","params":{"name":${JSON.stringify(name)}, "arguments" :${args}}}\n`;

async function session() {
  const c = conversation(SERVER, ['--validate-args=on'], {}, TIMEOUT);
  c.send(init);
  await c.waitFor((m) => m.id === 'init', 'initialize answer');
  c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  c.send({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  await c.waitFor((m) => m.id === 'list', 'tools/list answer');
  return c;
}

/** The raw lines the server read, as Buffers (newline included). */
function serverLines(c) {
  const path = join(c.dir, 'server-lines');
  if (!existsSync(path)) return [];
  const all = readFileSync(path);
  const lines = [];
  for (let at = 0; at < all.length; ) {
    const nl = all.indexOf(0x0a, at);
    const end = nl === -1 ? all.length : nl + 1;
    lines.push(all.subarray(at, end));
    at = end;
  }
  return lines;
}

const refusalText = (answer) => {
  assert.equal(answer.result?.isError, true, `a refusal: ${JSON.stringify(answer).slice(0, 300)}`);
  return answer.result.content[0].text;
};

describe('large arguments checked from their bytes', () => {
  test('a 1 MiB valid argument reaches the server byte for byte', { timeout: TIMEOUT }, async () => {
    const c = await session();
    try {
      const lines = [
        callLine(1, 'echo', `{ "size" : 64 ,\t"blob":"${BIG}" }`),
        callLine(2, 'write', `{"content":"${BIG}","\\u0070ath":"/tmp/\\u00e9","mode":"a"}`),
        callLine(3, 'echo', `{"blob":"${BIG}","size":1.0e0}`),
      ];
      for (const [i, line] of lines.entries()) {
        c.child.stdin.write(line);
        const answer = await c.waitFor((m) => m.id === i + 1, `answer to ${i + 1}`);
        assert.equal(answer.result.isError, undefined, `call ${i + 1} was not refused: ${JSON.stringify(answer).slice(0, 300)}`);
        assert.equal(answer.result.content[0].text, createHash('sha256').update(line.slice(0, -1)).digest('hex'), `the server read call ${i + 1} as written`);
      }
      const r = await c.finish();
      const calls = serverLines(c).filter((l) => l.includes('"tools/call"'));
      assert.equal(calls.length, 3);
      for (const [i, line] of lines.entries()) assert.ok(calls[i].equals(Buffer.from(line)), `call ${i + 1} arrived byte for byte`);
      for (const id of [1, 2, 3]) assert.equal(endOf(r.records, id).state, 'completed');
    } finally {
      c.cleanup();
    }
  });

  // Each fault twice: in a 1 MiB call (read from bytes) and in a small one (the value path). Same refusal, nothing at the server.
  const FAULTS = [
    {
      what: 'a string argument that is an array',
      tool: 'echo',
      args: (blob) => `{"size":3,"blob":["${blob}"]}`,
      expect: '- /blob: type: must be string (got array)',
    },
    { what: 'a missing required property', tool: 'write', args: (blob) => `{"content":"${blob}"}`, expect: '- /path: required: is required' },
    {
      what: 'an extra property with additionalProperties false',
      tool: 'echo',
      args: (blob) => `{"blob":"x","extra":"${blob}"}`,
      expect: '- /extra: additionalProperties: is not allowed',
    },
    { what: 'a number out of bounds', tool: 'echo', args: (blob) => `{"size":0,"blob":"${blob}"}`, expect: '- /size: minimum: must be >= 1' },
    {
      what: 'an integer that is not one',
      tool: 'echo',
      args: (blob) => `{"size":1.5,"blob":"${blob}"}`,
      expect: '- /size: type: must be integer (got number)',
    },
    {
      what: 'an enum member that is not one',
      tool: 'write',
      args: (blob) => `{"path":"p","content":"${blob}","mode":"\\u0077x"}`,
      expect: '- /mode: enum: must be one of "w", "a"',
    },
  ];
  for (const fault of FAULTS) {
    test(`refused, as a small call with the same fault is: ${fault.what}`, { timeout: TIMEOUT }, async () => {
      const c = await session();
      try {
        c.child.stdin.write(callLine('big', fault.tool, fault.args(BIG)));
        c.child.stdin.write(callLine('small', fault.tool, fault.args('small')));
        const big = refusalText(await c.waitFor((m) => m.id === 'big', 'the refusal of the large call'));
        const small = refusalText(await c.waitFor((m) => m.id === 'small', 'the refusal of the small call'));
        assert.equal(
          big,
          `mcpguard refused this call before it reached the server: Invalid arguments for tool "${fault.tool}": they do not match the tool's inputSchema, so the call was not sent.\n${fault.expect}\nCorrect the arguments and call the tool again.`,
        );
        assert.equal(big, small, 'the same refusal, whichever path found it');
        const r = await c.finish();
        assert.deepEqual(
          serverLines(c).filter((l) => l.includes('"tools/call"')),
          [],
          'zero bytes of either call at the server',
        );
        for (const id of ['big', 'small']) assert.equal(endOf(r.records, id).state, 'rejected');
      } finally {
        c.cleanup();
      }
    });
  }
});
