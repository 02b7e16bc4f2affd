// The grant table itself (src/gate/grants.ts): exact names, the definition
// binding, the argument bytes, and the bound on how many a session keeps.
// The end-to-end behaviour, through the SDK clients, is in grants.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Grants, MAX_GRANTS, checkScope, SCOPES } from '../../dist/gate/grants.js';

const DEF = 'a'.repeat(64);
const grant = (tool, scope, n = 0) => ({
  tool,
  scope,
  rule: 1,
  definition: DEF,
  callId: `c_${n}`,
  channel: 'elicitation',
  grantedAt: '2026-01-01T00:00:00.000Z',
});
const args = (text) => Buffer.from(text);
/** What covers a call rule 1 asks about (the rule every grant here answered). */
const cover = (g, tool, definition, bytes) => g.covering(tool, definition, bytes, 1);

test('a grant covers its exact tool name only: no case folding, no normalisation, no hidden characters ignored', () => {
  const g = new Grants();
  g.add(grant('delete_file', 'session-tool'), args('{}'));
  assert.equal(cover(g, 'delete_file', DEF, args('{"path":"x"}'))?.callId, 'c_0');
  for (const other of ['Delete_file', 'DELETE_FILE', 'delete_f\u0456le', 'delete_file\u200b', '\u202edelete_file', 'delete_file ', 'delete_fi\u0301le'])
    assert.equal(cover(g, other, DEF, args('{}')), null, JSON.stringify(other));
  // NFC and NFD spellings of one name are two names.
  g.add(grant('caf\u00e9', 'session-tool'), args('{}'));
  assert.equal(cover(g, 'cafe\u0301', DEF, args('{}')), null);
});

test('a grant is bound to the definition it was given for: another definition drops it, an unknown one is never covered', () => {
  const g = new Grants();
  g.add(grant('t', 'session-tool'), args('{}'));
  assert.equal(cover(g, 't', null, args('{}')), null, 'an unknown definition is not the granted one');
  assert.equal(g.size, 1);
  assert.equal(cover(g, 't', 'b'.repeat(64), args('{}')), null);
  assert.equal(g.size, 0, 'the grant of the old definition is gone');
  assert.equal(cover(g, 't', DEF, args('{}')), null, 'and stays gone if the old definition comes back');
});

test('session-same-arguments is bound to the argument bytes, not their value', () => {
  const g = new Grants();
  g.add(grant('t', 'session-same-arguments'), args('{"a":1}'));
  assert.ok(cover(g, 't', DEF, args('{"a":1}')));
  for (const other of ['{"a": 1}', '{"a":1.0}', '{"a":1,"b":2}', '{"a":2}', '{}']) assert.equal(cover(g, 't', DEF, args(other)), null, other);
});

test('a session keeps at most MAX_GRANTS grants, forgetting the oldest', () => {
  const g = new Grants();
  for (let n = 0; n < MAX_GRANTS + 10; n++) g.add(grant('t', 'session-same-arguments', n), args(`{"n":${n}}`));
  assert.equal(g.size, MAX_GRANTS);
  assert.equal(cover(g, 't', DEF, args('{"n":0}')), null, 'the oldest was forgotten');
  assert.equal(cover(g, 't', DEF, args(`{"n":${MAX_GRANTS + 9}}`))?.callId, `c_${MAX_GRANTS + 9}`);
});

test('a grant answers only the rule that asked: another rule (or the default) asking about the same call gets a card', () => {
  const g = new Grants();
  g.add(grant('fetch', 'session-tool'), args('{}'));
  assert.ok(g.covering('fetch', DEF, args('{}'), 1));
  assert.equal(g.covering('fetch', DEF, args('{}'), 0), null);
  assert.equal(g.covering('fetch', DEF, args('{}'), null), null);
});

test('checkScope: only a scope the card offered', () => {
  assert.deepEqual(SCOPES, ['once', 'session-same-arguments', 'session-tool']);
  for (const scope of SCOPES) assert.equal(checkScope(scope, SCOPES), scope);
  assert.equal(checkScope('once', ['once']), 'once');
  for (const [value, offered] of [
    ['session-tool', ['once']],
    ['Session-Tool', SCOPES],
    ['forever', SCOPES],
    [null, SCOPES],
    ['x'.repeat(10000), SCOPES],
  ]) {
    const verdict = checkScope(value, offered);
    assert.equal(typeof verdict, 'object', String(value).slice(0, 20));
    assert.ok(verdict.error.length < 300, 'a long scope is quoted clipped');
  }
});
