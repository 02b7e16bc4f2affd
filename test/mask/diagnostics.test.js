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

test('writeOut: C0/C1 as \\xNN, bidi and zero-width as \\uXXXX; lines keeps newline and tab; jsonLine keeps the value', async () => {
  const { writeOut, jsonLine } = await import('../../dist/mask/escape.js');
  assert.equal(writeOut('a\u001b]0;t\u0007\rb\u0085\u202e\u200b\ufeffc\td\n'), 'a\\x1b]0;t\\x07\\x0db\\x85\\u202e\\u200b\\ufeffc\\x09d\\x0a');
  assert.equal(writeOut('x\ty\nz\u001b', true), 'x\ty\nz\\x1b');
  assert.equal(writeOut('café €😀'), 'café €😀', 'printable text stays');
  const value = { name: 'a\u202eb\u200b\u0085\u001b' };
  const line = jsonLine(value);
  assert.doesNotMatch(line, /[\u0000-\u001f\u0080-\u009f\u202e\u200b]/);
  assert.deepEqual(JSON.parse(line), value);
});

test('a diagnostic line quoting a member name with ESC, CR and bidi drives nothing: written out, one line', async () => {
  const { Diagnostics } = await import('../../dist/mask/diagnostics.js');
  const { PassThrough } = await import('node:stream');
  const stream = new PassThrough();
  const chunks = [];
  stream.on('data', (c) => chunks.push(c));
  new Diagnostics(stream).line('the inputSchema of tool "t" cannot be used (/properties/q\u001b[2J\r\u202e/type)');
  const text = Buffer.concat(chunks).toString('utf8');
  assert.equal(text, 'mcpguard: the inputSchema of tool "t" cannot be used (/properties/q\\x1b[2J\\x0d\\u202e/type)\n');
});
