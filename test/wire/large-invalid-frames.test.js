// Large frames that turn out invalid only at their end, after most of their
// bytes were already checked while arriving (src/wire/json-prescan.ts): none of
// their bytes may reach the peer, and each is answered (client → server) or
// diverted (server → client) as a frame that was invalid from its first
// byte. The server counts the bytes it reads; the client counts the lines it
// gets. Frames are written in slices, so mcpguard assembles them from many reads.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, killStarted, runGuardUngated, tempDir } from '../helpers/run.js';

after(killStarted);
const home = tempDir();
after(home.cleanup);

const MAX = 1_500_000;
/** Text JSON escapes here and there, multibyte, ending in plain ASCII (where the spoils go, on character boundaries). */
const long = (n) => `${'abc "quoted" \\ tab\t é 数 😀 '.repeat(Math.ceil(n / 30)).slice(0, n)}${'z'.repeat(40)}`;
/** A tools/call line with a long argument, its JSON text then changed by `spoil` near the end. */
function request(id, spoil) {
  const text = `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"blob":${JSON.stringify(long(800_000))}}}}`;
  return Buffer.concat([spoil(Buffer.from(text)), Buffer.from('\n')]);
}
/** Replace the bytes just before the end of the long string (it ends 5 bytes before the line's closing braces + quote). */
const nearEnd = (bytes) => (buf) => {
  const at = buf.lastIndexOf('"}}}') - bytes.length;
  return Buffer.concat([buf.subarray(0, at), Buffer.from(bytes), buf.subarray(at + bytes.length)]);
};
const SPOILED = {
  'invalid UTF-8 in the last read': { spoil: nearEnd([0xff]), code: -32700 },
  'a truncated UTF-8 sequence': { spoil: nearEnd([0x41, 0xe6, 0x95]), code: -32700 },
  'a raw control byte': { spoil: nearEnd([0x01]), code: -32700 },
  'an invalid escape': { spoil: nearEnd(Buffer.from('\\x')), code: -32700 },
  'a lone surrogate escape': { spoil: nearEnd(Buffer.from('\\ud800')), code: -32700 },
  'a duplicate key after the long string': { spoil: (buf) => Buffer.concat([buf.subarray(0, -1), Buffer.from(',"id":99}')]), code: -32700 },
  'no closing brace': { spoil: (buf) => buf.subarray(0, -1), code: -32700 },
  'a batch': { spoil: (buf) => Buffer.concat([Buffer.from('['), buf, Buffer.from(']')]), code: -32600 },
  'over --max-frame-bytes': {
    spoil: (buf) => Buffer.concat([buf.subarray(0, buf.lastIndexOf('"}}}')), Buffer.from('x'.repeat(MAX)), Buffer.from('"}}}')]),
    code: -32600,
    pad: MAX,
  },
};

/** Spoiled answers whose id cannot be read with certainty: they answer no call. */
const UNPAIRED = new Set(['a batch', 'a duplicate key after the long string']);

function client(child) {
  const waiting = new Map();
  const lines = [];
  let pending = [];
  child.stdout.on('data', (chunk) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, nl));
      const line = Buffer.concat(pending);
      pending = [];
      start = nl + 1;
      lines.push(line);
      const message = JSON.parse(line.toString('utf8'));
      // An error that could not name its request (id null) answers the one request waiting.
      const key = message.id === null && waiting.size === 1 ? [...waiting.keys()][0] : message.id;
      const resolve = waiting.get(key);
      waiting.delete(key);
      resolve?.(message);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  const sendRaw = (id, bytes) =>
    new Promise((resolve) => {
      waiting.set(id, resolve);
      for (let at = 0; at < bytes.length; at += 40_000) child.stdin.write(bytes.subarray(at, at + 40_000));
    });
  const send = (id, method, params) => sendRaw(id, Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`));
  return { lines, send, sendRaw };
}

test('client → server: a large frame invalid at its end never reaches the server and is answered', { timeout: 120_000 }, async () => {
  const { child, done } = runGuardUngated(['--max-frame-bytes', String(MAX), '--on-invalid', 'reject', '--', process.execPath, fixture('byte-tally.mjs')], {
    keepOpen: true,
    timeout: 110_000,
    env: { MCPGUARD_HOME: home.dir },
  });
  const peer = client(child);
  let sent = 0;
  const counted = async (id, method, params) => {
    const line = Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    sent += line.length;
    return peer.sendRaw(id, line);
  };
  await counted(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
  let id = 10;
  for (const [what, { spoil, code }] of Object.entries(SPOILED)) {
    const answer = await peer.sendRaw(++id, request(id, spoil));
    assert.equal(answer.error?.code, code, `${what}: ${JSON.stringify(answer)}`);
    const tally = await counted(++id, 'tools/call', { name: 'tally' });
    assert.equal(tally.result?.content[0].text, String(sent), `${what}: the server read bytes of the refused frame (${JSON.stringify(tally)})`);
  }
  // The same frame unspoiled goes through whole.
  const good = request(++id, (buf) => buf);
  const answer = await peer.sendRaw(id, good);
  assert.equal(answer.error, undefined);
  sent += good.length;
  const tally = await counted(++id, 'tools/call', { name: 'tally' });
  assert.equal(tally.result.content[0].text, String(sent));
  child.stdin.end();
  assert.equal((await done).code, 0);
});

test('server → client: a large frame invalid at its end is diverted, and the client gets none of it', { timeout: 120_000 }, async () => {
  const { child, done } = runGuardUngated(['--max-frame-bytes', String(MAX), '--', process.execPath, fixture('byte-tally.mjs')], {
    keepOpen: true,
    timeout: 110_000,
    env: { MCPGUARD_HOME: home.dir },
  });
  const peer = client(child);
  await peer.send(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
  let id = 10;
  for (const [what, { spoil, pad }] of Object.entries(SPOILED)) {
    // A response to the emit call itself, spoiled: the server writes it before its real answer.
    // (Too long a frame is sent short and padded by the server: the request must stay under the cap.)
    const callId = ++id;
    const asResponse = (buf) => Buffer.from(buf.toString('latin1').replace('"method":"tools/call","params":', '"result":'), 'latin1');
    const bad = asResponse(request(callId, pad === undefined ? spoil : (buf) => buf));
    const padAt = bad.lastIndexOf('"}}}');
    const before = peer.lines.length;
    const answer = await peer.send(callId, 'tools/call', { name: 'emit', arguments: { frame: bad.toString('base64'), pad: pad ?? 0, padAt } });
    if (UNPAIRED.has(what)) {
      // No id can be read with certainty (a batch, two ids): the line is only noise, and the real answer follows.
      assert.deepEqual(answer.result, {}, `${what}: ${JSON.stringify(answer).slice(0, 300)}`);
    } else {
      // The spoiled answer names its call: the call is answered by mcpguard at once, and the server's later answer is a second one, diverted.
      assert.equal(answer.error?.data?.rule, 'unreadable_answer', `${what}: ${JSON.stringify(answer).slice(0, 300)}`);
    }
    assert.equal(peer.lines.length, before + 1, `${what}: the client got more than the one answer`);
  }
  child.stdin.end();
  const { code, stderr } = await done;
  assert.equal(code, 0);
  const spoiled = Object.keys(SPOILED).length;
  assert.equal(stderr.match(/is not JSON-RPC/g)?.length, spoiled + (spoiled - UNPAIRED.size), stderr.slice(0, 2000));
});
