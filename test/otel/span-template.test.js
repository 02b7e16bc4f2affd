// Spans written from a template (src/otel/span-template.ts) against the same spans written
// field by field: byte for byte, over every kind of call the builder writes and values that
// do and do not fit a template's holes (ids of another length, a duration that turns from a
// double into an integer, a string that is not ASCII, a negative id, a trace of the client's).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { processMasker } from '../../dist/mask/mask.js';
import { SpanArena } from '../../dist/otel/arena.js';
import { writeCallSpan } from '../../dist/otel/call-span.js';
import { encodeProto } from '../../dist/otel/encode-proto.js';
import { decodeOtlp } from '../helpers/otlp-receiver.js';

const SESSION = { sessionId: 's_20261202T000000Z_0123456789ab', schema: true, policy: 'p.json' };
const T = Date.parse('2026-12-02T12:00:00.123Z');

/** A small deterministic generator (mulberry32): the same calls every run. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const card = { shown_at: new Date(T + 3).toISOString(), answered_at: new Date(T + 2500).toISOString() };
/** The kinds of call: what stays the same from call to call of a kind. */
const KINDS = [
  {},
  { state: 'error', errorCode: -32001 },
  { state: 'tool_error' },
  { state: 'denied', dispatchedAt: null, decision: { by: 'policy', rule: 2, channel: null, card: null, reason: 'r' } },
  { state: 'rejected', dispatchedAt: null, decision: { by: 'schema', rule: null, channel: null, card: null, reason: 'r' } },
  { state: 'rejected', dispatchedAt: null, decision: { by: 'pins', rule: null, channel: null, card: null, reason: 'r' } },
  { decision: { by: 'approval', rule: 0, channel: 'elicitation', card, reason: 'r' } },
  { cancelRequested: true },
  { stderr: { seen: 900, retained: 120, truncated: true, shared: true, text: 'x' } },
  { content: { arguments: Buffer.from('{"a":1}'), argumentsBytes: 7, result: Buffer.from('{"ok":true}'), resultBytes: 11 } },
  { method: 'prompts/get', tool: null, target: 'prompts/get greet', steps: undefined },
  { method: 'ping', tool: null, generation: null, dispatchedAt: null, steps: undefined },
  { tool: 'read_file' },
  { tool: 'write_file', protocolVersion: '2025-03-26' },
];

const pick = (r, list) => list[Math.floor(r() * list.length)];
const IDS = [0, 7, 99, 100, 127, 128, 16383, 16384, 2 ** 31, 2 ** 53 - 1, -1, -(2 ** 53) + 1, 'req-1', 'req-ü', '', 'x'.repeat(200)];
const TRACEPARENTS = [null, null, null, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00'];

/** One call of `kind`, its own values drawn from `r`: most fit the last call's template, some do not. */
function call(r, kind, i) {
  const started = T + i * 3 + Math.floor(r() * 3);
  const f = {
    callId:
      r() < 0.02
        ? `c_${'ü'.repeat(12)}`
        : `c_${Math.floor(r() * 2 ** 48)
            .toString(16)
            .padStart(12, '0')}`,
    requestId: r() < 0.7 ? 1000 + i : pick(r, IDS),
    method: 'tools/call',
    tool: 'echo',
    target: null,
    state: 'completed',
    startedAt: r() < 0.05 ? started + 0.5 : started,
    dispatchedAt: started + Math.floor(r() * 300),
    endedAt: started + 300 + Math.floor(r() * 2 ** 20),
    protocolVersion: '2025-06-18',
    traceparent: pick(r, TRACEPARENTS),
    tracestate: r() < 0.05 ? 'vendor=1' : null,
    decision: null,
    generation: r() < 0.9 ? 1 : 1 + Math.floor(r() * 200),
    cancelRequested: false,
    errorCode: null,
    stderr: null,
    // Durations: mostly fractions (a double), some whole (an integer), some none.
    steps: { schemaMs: r() < 0.8 ? r() / 3 : r() < 0.5 ? 0 : null, policyMs: r() < 0.8 ? r() * 2 : Math.floor(r() * 300) },
    ...kind,
  };
  if (f.dispatchedAt !== null && kind.dispatchedAt === undefined && r() < 0.02) f.dispatchedAt = f.startedAt - 5; // a clock that stepped back
  return f;
}

/** The calls' spans from an arena keeping `templates` templates: its one chunk's bytes, and how many spans came from a template. */
function written(calls, templates) {
  const masker = processMasker();
  const arena = new SpanArena(100_000, 100_000, () => {}, templates);
  for (const f of calls) writeCallSpan(f, SESSION, masker, arena);
  return { bytes: arena.take().bytes, templated: arena.templated };
}

test('a span written from a template is byte for byte the span written field by field: every kind of call, ids, times and durations that fit and that do not', () => {
  for (const seed of [1, 2, 3]) {
    const r = random(seed);
    // Runs of one kind (a session's calls come in runs), the kinds in turn, then at random.
    const calls = [];
    for (let i = 0; i < 3000; i++) calls.push(call(r, i < 1400 ? KINDS[Math.floor(i / 100) % KINDS.length] : pick(r, KINDS), i));
    const plain = written(calls, 0);
    assert.equal(plain.templated, 0);
    for (const templates of [1, 2, 8]) {
      const t = written(calls, templates);
      assert.ok(t.bytes.equals(plain.bytes), `seed ${seed}, ${templates} templates: the bytes differ`);
      // Half the calls here have a value that fits no template; 8 templates still write over a fifth of them.
      assert.ok(t.templated > (templates === 8 ? calls.length / 5 : 0), `seed ${seed}, ${templates} templates: only ${t.templated} spans from a template`);
    }
    const spans = decodeOtlp(
      '/v1/traces',
      'application/x-protobuf',
      encodeProto('traces', { resource: [], scope: { name: 'm', version: '0' }, spans: [], logs: [], metrics: [] }, plain.bytes),
    ).body.resourceSpans[0].scopeSpans[0].spans;
    assert.equal(spans.length, calls.length);
  }
});

test('a template is used only while the values fit its holes: a longer request id, an integer duration, a string that is not ASCII are written field by field', () => {
  const r = random(9);
  const base = call(r, {}, 0);
  const same = (extra) => ({ ...base, ...extra, steps: { ...base.steps, ...extra.steps } });
  const series = [
    same({ requestId: 99, steps: { schemaMs: 0.5 } }),
    same({ requestId: 98, steps: { schemaMs: 0.25 } }), // fits: two digits, a double
    same({ requestId: 100, steps: { schemaMs: 0.5 } }), // three digits: a new template
    same({ requestId: 101, steps: { schemaMs: 2 } }), // an integer where a double was: a new template
    same({ requestId: 'ab', steps: { schemaMs: 0.5 } }), // fits the first: a request id is written as a string, 99 as "99"
    same({ requestId: 'aü', steps: { schemaMs: 0.5 } }), // two characters, three bytes: never a template
    same({ requestId: 'cd', steps: { schemaMs: 0.5 } }), // fits the first again
  ];
  const t = written(series, 8);
  assert.ok(t.bytes.equals(written(series, 0).bytes));
  assert.equal(t.templated, 3, 'the second call, "ab" and "cd"');
});

test("a session's usual calls (a run of one tool, ids counting up, durations in fractions of a ms) are written from a template but for the first of each id length", () => {
  const r = random(4);
  const calls = Array.from({ length: 2000 }, (_, i) => ({ ...call(r, {}, i), requestId: i + 1, traceparent: null, tracestate: null, generation: 1 }));
  for (const f of calls) f.steps = { schemaMs: 0.01 + r() / 3, policyMs: 0.01 + r() };
  const t = written(calls, 8);
  assert.ok(t.bytes.equals(written(calls, 0).bytes));
  // Ids of 1, 2, 3 and 4 digits: four templates; the callIds drawn as not ASCII (about 2 %) are written field by field.
  assert.ok(t.templated >= calls.length * 0.95, `${t.templated} of ${calls.length}`);
});

test('values the call writer does not use yet go through a template only when they fit: a boolean only as itself, an array never', async () => {
  const { OwnKey } = await import('../../dist/otel/interned.js');
  const key = new OwnKey('k');
  const values = [true, true, false, false, true, ['a'], ['b'], 'x', 'y', 1.5, 2.5, -3, -4, 2 ** 53, 2 ** 53 + 2];
  const write = (templates) => {
    const arena = new SpanArena(100, 100, () => {}, templates);
    for (const v of values) {
      arena.begin('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', '', undefined, 'n', 2, T, T + 1);
      arena.own(key, v);
      arena.end(0, undefined);
    }
    return arena;
  };
  const t = write(8);
  assert.ok(t.take().bytes.equals(write(0).take().bytes));
  // The second true, the second false, the third true, y after x, 2.5 after 1.5, -4 after -3, and 2^53 and 2^53 + 2
  // (past the safe integers: doubles, as 1.5 was); never an array.
  assert.equal(t.templated, 8);
});
