// Recorded scalar members (dist/wire/json-scan.js) are kept packed in one small
// integer (type, start, length) and get a node only when someone asks for one;
// readMember reads a member's type and span into the caller's scratch node
// without making one. What must hold: readMember, get and iteration agree
// with the reference scanner's nodes for every member, packed or not (the
// packing has limits on start and length: both sides of them are checked);
// asking twice gives the same node; and nothing read later depends on the
// frame's bytes, which may be reused once the frame is forwarded.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readMember, scanJson } from '../../dist/wire/json-scan.js';
import { classifyFrame, memberId, memberString, memberType } from '../../dist/wire/jsonrpc.js';
import { scanJson as referenceScan } from './reference/json-scan-be66652.js';

const span = (n) => ({ type: n.type, start: n.start, end: n.end });

/** Every recorded object in a scanned tree, paired with the reference's node at the same place. */
function recordedPairs(node, ref, out = []) {
  if (node.members !== undefined) {
    assert.notEqual(ref.members, undefined);
    out.push([node, ref]);
    for (const key of ref.members.keys()) {
      const child = ref.members.get(key);
      if (child.type === 'object' || child.type === 'array') recordedPairs(node.members.get(key), child, out);
    }
  }
  if (node.items !== undefined)
    node.items.forEach((item, i) => {
      recordedPairs(item, ref.items[i], out);
    });
  return out;
}

/** Checks every member of every recorded object: readMember first (nothing made yet), then get, then iteration. */
function agreeWithReference(frame) {
  const mine = scanJson(frame);
  const ref = referenceScan(frame);
  assert.equal(mine.ok, ref.ok);
  if (!mine.ok) return 0;
  let checked = 0;
  for (const [node, refNode] of recordedPairs(mine.value, ref.value)) {
    const into = { type: 'null', start: -1, end: -1 };
    for (const [key, expected] of refNode.members) {
      assert.equal(readMember(node.members, key, into), true, key);
      assert.deepEqual(span(into), span(expected), `readMember ${key}`);
      checked++;
    }
    const before = span(into);
    assert.equal(readMember(node.members, '\u0000not a member', into), false);
    assert.deepEqual(span(into), before, 'a missing member leaves the scratch node alone');
    for (const [key, expected] of refNode.members) {
      const got = node.members.get(key);
      assert.deepEqual(span(got), span(expected), `get ${key}`);
      assert.equal(node.members.get(key), got, `the same node on every ask (${key})`);
    }
    for (const [key, value] of node.members) assert.equal(value, node.members.get(key), `iteration gives get's node (${key})`);
    assert.equal(node.members.size, refNode.members.size);
  }
  return checked;
}

describe('recorded scalar members', () => {
  test('readMember, get and iteration agree with the reference scanner on random messages', () => {
    const scalar = fc.oneof(fc.string({ maxLength: 300 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
    const value = fc.oneof(scalar, fc.dictionary(fc.string({ maxLength: 6 }), scalar, { maxKeys: 5 }), fc.array(scalar, { maxLength: 3 }));
    const object = fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 12 });
    let checked = 0;
    fc.assert(
      fc.property(object, fc.dictionary(fc.string({ maxLength: 8 }), object, { maxKeys: 3 }), (top, nested) => {
        checked += agreeWithReference(Buffer.from(JSON.stringify({ ...top, params: nested })));
      }),
      { numRuns: 1500 },
    );
    assert.ok(checked > 10000, `only ${checked} members checked`);
  });

  test('scalars on both sides of the packing limits (start 2^20, length 256)', () => {
    const limit = 1 << 20;
    for (const length of [1, 254, 255, 256, 257, 5000]) {
      for (const start of [0, limit - 300, limit - 1, limit, limit + 1, limit + 7777, 2 * limit, 4 * limit + 3]) {
        // A member whose value starts at exactly `start`, then more scalars after it.
        const head = '{"pad":"';
        const prefix = Math.max(0, start - head.length - '","v":'.length);
        const text = `${head}${'p'.repeat(prefix)}","v":"${'s'.repeat(Math.max(0, length - 2))}","n":${'9'.repeat(length)},"t":true,"z":null}`;
        const frame = Buffer.from(text);
        agreeWithReference(frame);
        const into = { type: 'null', start: 0, end: 0 };
        assert.equal(readMember(scanJson(frame).value.members, 'n', into), true);
        assert.equal(into.end - into.start, length, `number of ${length} digits at ${start}`);
      }
    }
  });

  test("types and spans read after the frame's bytes were overwritten are those of the scan", () => {
    const text = '{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","flag":false,"n":null,"arguments":{"a":1}}}';
    const frame = Buffer.from(text);
    const scanned = scanJson(frame).value;
    const expected = referenceScan(Buffer.from(text)).value;
    // A reused join buffer: the next frame's bytes land where this one was.
    frame.fill(0x5b);
    for (const key of ['jsonrpc', 'id', 'method']) {
      const into = { type: 'null', start: 0, end: 0 };
      assert.equal(readMember(scanned.members, key, into), true);
      assert.deepEqual(span(into), span(expected.members.get(key)), key);
    }
    const params = scanned.members.get('params');
    for (const key of ['name', 'flag', 'n', 'arguments'])
      assert.deepEqual(span(params.members.get(key)), span(expected.members.get('params').members.get(key)), key);
  });

  test('objects with more members than a list holds (a Map) answer readMember too', () => {
    const object = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i % 3 === 0 ? `v${i}` : i % 3 === 1 ? i : { o: i }]));
    assert.ok(agreeWithReference(Buffer.from(JSON.stringify({ params: object, ...object }))) >= 40);
  });

  test('jsonrpc helpers read scalar members as before', () => {
    const frame = Buffer.from('{"jsonrpc":"2.0","id":"x\\u0041","method":"tools/call","params":{"name":"echo","requestId":12,"isError":true,"bad":1.5}}\n');
    const request = classifyFrame(frame, { allowBatch: false });
    assert.equal(request.kind, 'request');
    assert.equal(request.method, 'tools/call');
    assert.equal(request.idKey, 'sxA');
    assert.equal(memberString(frame, request.params, 'name'), 'echo');
    assert.equal(memberString(frame, request.params, 'requestId'), undefined);
    assert.equal(memberId(frame, request.params, 'requestId'), 12);
    assert.equal(memberId(frame, request.params, 'bad'), undefined);
    assert.equal(memberType(request.params, 'isError'), 'true');
    assert.equal(memberType(request.params, 'missing'), undefined);
    const refused = classifyFrame(Buffer.from('{"jsonrpc":"2.1","id":3,"method":"ping"}\n'), { allowBatch: false });
    assert.deepEqual([refused.kind, refused.id, refused.method], ['invalid', 3, 'ping']);
    const noVersion = classifyFrame(Buffer.from('{"id":4,"result":{}}\n'), { allowBatch: false });
    assert.deepEqual([noVersion.kind, noVersion.id, noVersion.reason], ['invalid', 4, 'missing "jsonrpc": "2.0"']);
  });
});

describe('classified messages keep no part of the root node classifyFrame reuses', () => {
  test('requests, responses and batches read the same after later lines were classified', () => {
    const frames = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}',
      '{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no such method","data":{"k":true}}}',
      '[{"jsonrpc":"2.0","id":2,"method":"ping","params":{}},{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}]',
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"r"}}',
    ].map((text) => Buffer.from(`${text}\n`));
    const kept = frames.map((frame) => classifyFrame(frame, { allowBatch: true }));
    for (let round = 0; round < 3; round++) for (const frame of [...frames].reverse()) classifyFrame(frame, { allowBatch: true });
    const nodeOf = (message) => (message.kind === 'response' ? message.body : message.params);
    const messages = kept.flatMap((c, i) => (c.kind === 'batch' ? c.items.map((m) => [m, frames[i]]) : [[c, frames[i]]]));
    assert.equal(messages.length, 6);
    for (const [message, frame] of messages) {
      assert.notEqual(message.kind, 'invalid');
      const expected = referenceScan(frame, 0, frame.length - 1).value;
      const root = expected.type === 'array' ? expected.items.find((item) => item.start <= nodeOf(message).start && nodeOf(message).end <= item.end) : expected;
      const reference = root.members.get(message.kind === 'response' ? (message.isError ? 'error' : 'result') : 'params');
      const node = nodeOf(message);
      assert.deepEqual(span(node), span(reference));
      assert.deepEqual([...node.members.keys()], [...reference.members.keys()]);
      for (const [key, value] of reference.members) assert.deepEqual(span(node.members.get(key)), span(value), key);
    }
  });
});
