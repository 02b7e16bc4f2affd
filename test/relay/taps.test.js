// The relay's line taps (relay/hooks.ts): the one place a line's fate is
// decided in both directions, with the taps the restart code uses called at
// a fixed point. A real Relay on real framing and writers (in-memory
// streams): what each tap saw, in what order, and what reached each side.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { Relay } from '../../dist/relay/relay.js';
import { Diagnostics } from '../../dist/mask/diagnostics.js';
import { FrameWriter } from '../../dist/wire/writer.js';
import { LineSplitter } from '../../dist/wire/framing.js';

const OPTIONS = { maxFrameBytes: 1 << 20, onInvalid: 'reject', onChildNoise: 'continue', allowBatch: false, callTimeout: null, eraRules: 'enforce' };
const line = (value) => Buffer.from(`${JSON.stringify(value)}\n`);

/** Everything written to a stream so far, as text. */
function collected(stream) {
  const chunks = [];
  stream.on('data', (c) => chunks.push(c));
  return () => Buffer.concat(chunks).toString();
}

function setUp(taps) {
  const [client, child, diagStream] = [new PassThrough(), new PassThrough(), new PassThrough()];
  const seen = { client: collected(client), child: collected(child), diag: collected(diagStream) };
  const order = [];
  const observer = { callStarted: (call) => void order.push(`callStarted ${call.method}`), callEnded: (call) => void order.push(`callEnded ${call.state}`) };
  const writer = (stream) => new FrameWriter(stream, { queueLimit: 1 << 20, onPressure: () => {}, onClosed: () => {} });
  const relay = new Relay(OPTIONS, writer(client), writer(child), new Diagnostics(diagStream), [observer], () => {}, null, null, taps(order));
  const fromClient = new LineSplitter(OPTIONS.maxFrameBytes, (e) => relay.fromClient(e));
  const fromChild = new LineSplitter(OPTIONS.maxFrameBytes, (e) => relay.fromChild(e));
  return { relay, seen, order, fromClient, fromChild };
}

/** A tap that only looks, logging each line's first bytes. */
const looking = (order, name) => ({
  clientLine: (e) => void order.push(`${name} client ${e.frame.toString().trim()}`),
  serverLine: (e) => void order.push(`${name} server ${e.frame.toString().trim()}`),
});

describe('line taps', () => {
  test('every tap sees a client line before the relay checks it, then the relay forwards it', async () => {
    const { seen, order, fromClient } = setUp((order) => [looking(order, 'a'), looking(order, 'b')]);
    const request = line({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    });
    fromClient.push(request);
    await new Promise(setImmediate);
    const text = request.toString().trim();
    assert.deepEqual(order, [`a client ${text}`, `b client ${text}`, 'callStarted initialize']);
    assert.equal(seen.child(), request.toString());
  });

  test('a server line a tap takes reaches neither a later tap, nor the relay, nor the client', async () => {
    const taking = (order) => ({
      serverLine: (e) => {
        const own = e.frame.includes('"mcpguard-own"');
        order.push(own ? 'taken' : 'passed');
        return own;
      },
    });
    const { relay, seen, order, fromClient, fromChild } = setUp((order) => [taking(order), looking(order, 'watch')]);
    fromClient.push(
      line({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    );
    order.length = 0;
    // The answer to mcpguard's own request: the relay would count it as noise (an answer to nothing it sent).
    fromChild.push(line({ jsonrpc: '2.0', id: 'mcpguard-own', result: {} }));
    const answer = line({ jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } } });
    fromChild.push(answer);
    await new Promise(setImmediate);
    assert.deepEqual(order, ['taken', 'passed', `watch server ${answer.toString().trim()}`, 'callEnded completed']);
    assert.equal(seen.client(), answer.toString());
    assert.equal(relay.counters.noiseLines, 0);
    assert.equal(seen.diag(), '');
  });
});
