import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseTraceparent } from '../../dist/otel/model.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';

test('traceparent: a valid version-00 value gives the trace, the parent span and the sampled flag', () => {
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-01`), { traceId: TRACE, spanId: SPAN, sampled: true });
  assert.deepEqual(parseTraceparent(`00-${TRACE}-${SPAN}-00`, 'congo=t61rcWkgMzE'), {
    traceId: TRACE,
    spanId: SPAN,
    sampled: false,
    traceState: 'congo=t61rcWkgMzE',
  });
});

test('traceparent: a later version may carry more fields; version 00 may not', () => {
  assert.equal(parseTraceparent(`01-${TRACE}-${SPAN}-01-extra`)?.traceId, TRACE);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01-extra`), null);
});

test('traceparent: hostile or malformed values are refused, never half-read', () => {
  for (const bad of [
    undefined,
    42,
    '',
    `ff-${TRACE}-${SPAN}-01`,
    `00-${TRACE.toUpperCase()}-${SPAN}-01`,
    `00-${'0'.repeat(32)}-${SPAN}-01`,
    `00-${TRACE}-${'0'.repeat(16)}-01`,
    `00-${TRACE}-${SPAN}-1`,
    `00-${TRACE}-${SPAN}-01\n`,
    `00_${TRACE}-${SPAN}-01`,
    ` 00-${TRACE}-${SPAN}-01`,
  ])
    assert.equal(parseTraceparent(bad), null, JSON.stringify(bad));
});

test('traceparent: a tracestate that is not a string or is over 512 characters is dropped', () => {
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 7)?.traceState, undefined);
  assert.equal(parseTraceparent(`00-${TRACE}-${SPAN}-01`, 'a='.padEnd(513, 'x'))?.traceState, undefined);
});
