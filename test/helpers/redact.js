// Feeding the stderr masker the way the tests need: in given pieces, checking the hold-back bound after each.
import assert from 'node:assert/strict';
import { Redactor, MAX_HOLD_BYTES } from '../../dist/mask/redact.js';

/** Redact `pieces` in order with a fresh Redactor over `env`; returns [text, count]. */
export function redactPieces(pieces, env) {
  const r = new Redactor({ env });
  const out = [];
  for (const p of pieces) {
    out.push(r.push(Buffer.from(p)));
    assert.ok(r.pending <= MAX_HOLD_BYTES, `held ${r.pending}`);
  }
  out.push(r.flush());
  return [Buffer.concat(out).toString('utf8'), r.count];
}
