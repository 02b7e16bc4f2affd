import { test } from 'node:test';
import assert from 'node:assert/strict';
import { escapeBytes } from '../../dist/mask/diagnostics.js';

test('printable text as is, quotes and backslashes escaped', () => {
  assert.equal(escapeBytes(Buffer.from('loading optional extension')), '"loading optional extension"');
  assert.equal(escapeBytes(Buffer.from('say "hi" \\ ok')), '"say \\"hi\\" \\\\ ok"');
});

test('control characters, terminal escapes and invalid UTF-8 are shown as escapes', () => {
  assert.equal(escapeBytes(Buffer.from('a\nb\tc\r\x1b[31m\x7f')), '"a\\nb\\tc\\r\\x1b[31m\\x7f"');
  assert.equal(escapeBytes(Buffer.from([0x63, 0x61, 0x66, 0xe9])), '"caf\\xe9"');
  assert.equal(escapeBytes(Buffer.from([0xc2, 0x85])), '"\\xc2\\x85"', 'C1 control NEL');
  assert.equal(escapeBytes(Buffer.from('\u202e')), '"\\xe2\\x80\\xae"', 'bidi override');
});

test('valid multibyte characters stay readable; a character cut by the limit is escaped', () => {
  assert.equal(escapeBytes(Buffer.from('café €😀')), '"café €😀"');
  assert.equal(escapeBytes(Buffer.from('ab€'), 3), '"ab\\xe2"…(+2 bytes)');
});

test('long input is cut and says how much was left out', () => {
  assert.equal(escapeBytes(Buffer.alloc(200, 0x61), 5), '"aaaaa"…(+195 bytes)');
});
