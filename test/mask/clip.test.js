// Masker.clip: the head of a text for a telemetry attribute (the OTLP
// export's --otlp-content), masked before it is cut: a secret that starts
// before the cut is masked whole, never shown in part; a copy that is only
// the head of a longer text (the call keeps at most the cap plus the
// masker's look-ahead) is masked as far as it can be decided.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Masker } from '../../dist/mask/mask.js';
import { MAX_HOLD_BYTES } from '../../dist/mask/redact.js';

const GHP = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const masker = new Masker({ DEPLOY_TOKEN: 'Zq7secretvalue42abc' });

test('a secret across the cut is masked whole; the rest is counted', () => {
  for (let at = 4070; at <= 4100; at++) {
    const text = `${'a'.repeat(at)} ${GHP} ${'b'.repeat(6000)}`;
    const { text: shown, omitted } = masker.clip(Buffer.from(text), 4096);
    assert.ok(Buffer.byteLength(shown) <= 4096);
    assert.ok(!shown.includes('A1b2'), `secret at ${at}: ${shown.slice(-30)}`);
    assert.ok(omitted > 0);
  }
});

test('a head-only copy (cap + look-ahead of a longer text) shows no undecided secret, and counts the whole', () => {
  const text = Buffer.from(`${'a'.repeat(4090)} ${GHP} ${'c'.repeat(MAX_HOLD_BYTES * 3)}`);
  const head = text.subarray(0, 4096 + MAX_HOLD_BYTES);
  const { text: shown, omitted } = masker.clip(head, 4096, text.length);
  assert.ok(!shown.includes('A1b2'), shown.slice(-30));
  assert.ok(omitted >= text.length - 4096 - 64, String(omitted));
});

test('short text: masked, whole, nothing omitted; env secrets by name; never cut inside a character', () => {
  assert.deepEqual(masker.clip(Buffer.from('{"k":"Zq7secretvalue42abc"}'), 4096), { text: '{"k":"[REDACTED:DEPLOY_TOKEN]"}', omitted: 0 });
  const r = masker.clip(Buffer.from(`${'a'.repeat(4095)}é tail`), 4096);
  assert.equal(r.text, 'a'.repeat(4095));
  assert.equal(r.omitted, Buffer.byteLength('é tail'));
});
