// The small helpers every layer shares (src/base/values.ts): one copy each.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clip, clipMiddle, isObject } from '../../dist/base/values.js';

test('isObject: a plain object, never null or an array', () => {
  assert.equal(isObject({}), true);
  assert.equal(isObject({ a: 1 }), true);
  for (const v of [null, undefined, [], [1], 'x', 1, true]) assert.equal(isObject(v), false, JSON.stringify(v));
});

test('clip: at most max characters, the last one an ellipsis when cut', () => {
  assert.equal(clip('abcdef', 6), 'abcdef');
  assert.equal(clip('abcdefg', 6), 'abcde…');
  assert.equal(clip('abcdefg', 6).length, 6);
});

test('clipMiddle: keeps the start and the end, at most max characters', () => {
  const path = 'python3 /srv/mcp/servers/a-long-directory-name/noisy_server.py';
  const cut = clipMiddle(path, 30);
  assert.equal(cut.length, 30);
  assert.ok(cut.startsWith('python3 /s') && cut.endsWith('noisy_server.py') && cut.includes('…'), cut);
  assert.equal(clipMiddle(path, 30, 0.5).indexOf('…'), 14);
  assert.equal(clipMiddle('short', 30), 'short');
  assert.equal(clipMiddle('abcdefgh', 4), 'abc…');
});
