// Times for people: --since/--until values (local unless they name a zone,
// relative, today/yesterday), and record times shown in local time with the
// zone or in UTC; the log read backwards; tables cut to a width.
process.env.TZ = 'America/New_York'; // before any Date is made: Node reads TZ when it changes
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Clock, parseWhen } from '../../dist/views/when.js';
import { BackwardLineReader } from '../../dist/views/backwards.js';
import { clipMiddle, fitColumns } from '../../dist/views/format.js';
import { globToRegExp } from '../../dist/views/filters.js';

const NOW = Date.parse('2026-11-30T23:47:07.000Z'); // 18:47:07 in New York (EST, -05:00)

test('parseWhen: dates and date-times, local unless zoned', () => {
  const at = (text, utc = false) => new Date(parseWhen(text, '--since', utc, NOW)).toISOString();
  assert.equal(at('2026-11-30'), '2026-11-30T05:00:00.000Z');
  assert.equal(at('2026-11-30 14:05'), '2026-11-30T19:05:00.000Z');
  assert.equal(at('2026-11-30T14:05:09.5'), '2026-11-30T19:05:09.500Z');
  assert.equal(at('2026-07-01 12:00'), '2026-07-01T16:00:00.000Z'); // EDT, -04:00
  assert.equal(at('2026-11-30T14:05:00Z'), '2026-11-30T14:05:00.000Z');
  assert.equal(at('2026-11-30T14:05+01:00'), '2026-11-30T13:05:00.000Z');
  assert.equal(at('2026-11-30 14:05 -0330'), '2026-11-30T17:35:00.000Z');
  assert.equal(at('2026-11-30 14:05', true), '2026-11-30T14:05:00.000Z');
});

test('parseWhen: relative times, today, yesterday (across a DST change), now', () => {
  const at = (text) => new Date(parseWhen(text, '--since', false, NOW)).toISOString();
  assert.equal(at('2h'), '2026-11-30T21:47:07.000Z');
  assert.equal(at('30m'), '2026-11-30T23:17:07.000Z');
  assert.equal(at('7d'), '2026-11-23T23:47:07.000Z');
  assert.equal(at('2h ago'), '2026-11-30T21:47:07.000Z');
  assert.equal(at('now'), '2026-11-30T23:47:07.000Z');
  assert.equal(at('today'), '2026-11-30T05:00:00.000Z');
  assert.equal(at('yesterday'), '2026-11-29T05:00:00.000Z');
  // The day after the fall-back change (2026-11-01 in New York) has 25 hours: yesterday is still midnight.
  const afterChange = Date.parse('2026-11-02T15:00:00Z');
  assert.equal(new Date(parseWhen('yesterday', '--since', false, afterChange)).toISOString(), '2026-11-01T04:00:00.000Z');
});

test('parseWhen: anything else names the option and the value', () => {
  for (const bad of ['', 'soon', '2026-11-31', '2026-02-29', '2026-13-01', '2026-11-30 24:00', '2026-11-30 12:60', '2h30m', '-2h', '2026-11-30T14:05+25']) {
    assert.throws(
      () => parseWhen(bad, '--until', false, NOW),
      (error) => error.code === 'bad_option' && error.message.startsWith(`--until expects a time (`) && error.message.includes(`got '${bad}'`),
      bad,
    );
  }
});

test('Clock: local time with the zone, a different offset named in the cell, UTC with --utc', () => {
  const local = new Clock(false, NOW);
  assert.equal(local.zone, '-05:00');
  assert.equal(local.date('2026-11-30T23:47:07.123Z'), '2026-11-30 18:47:07');
  assert.equal(local.date('2026-07-01T12:00:00.000Z'), '2026-07-01 08:00:00 -04:00');
  assert.equal(local.full('2026-11-30T23:47:07.123Z'), '2026-11-30 18:47:07 -05:00');
  assert.equal(local.clock('2026-11-30T23:47:07.123Z'), '18:47:07.123');
  assert.equal(local.date(null), '-');
  assert.equal(local.date('not a time'), '-');
  const utc = new Clock(true, NOW);
  assert.equal(utc.zone, 'UTC');
  assert.equal(utc.date('2026-07-01T12:00:00.000Z'), '2026-07-01 12:00:00');
  assert.equal(utc.full('2026-11-30T23:47:07.123Z'), '2026-11-30 23:47:07 UTC');
});

test('BackwardLineReader: every complete line, last first, across chunk edges; a torn tail is no line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpguard-backwards-'));
  try {
    const lines = ['', 'a', 'x'.repeat(37), '', 'b'.repeat(5), 'last line'];
    for (const [tail, chunk] of [
      ['', 4],
      ['torn', 4],
      ['', 1],
      ['', 1 << 20],
      ['torn-only-no-newline', 3],
    ]) {
      const file = join(dir, `f-${tail}-${chunk}`);
      const whole = tail === 'torn-only-no-newline' ? tail : `${lines.join('\n')}\n${tail}`;
      writeFileSync(file, whole);
      const reader = new BackwardLineReader(file, chunk);
      const got = [];
      for (let line = reader.next(); line !== null; line = reader.next()) got.push(line.toString());
      const expected = tail === 'torn-only-no-newline' ? [] : [...lines].reverse();
      assert.deepEqual(got, expected, `tail '${tail}', chunk ${chunk}`);
    }
    const empty = join(dir, 'empty');
    writeFileSync(empty, '');
    assert.equal(new BackwardLineReader(empty).next(), null);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('tables: a command cut in its middle keeps the script; columns cut, then left out', () => {
  assert.equal(clipMiddle('node /opt/mcp/servers/filesystem/dist/index.js', 24), 'node /opt…/dist/index.js');
  assert.equal(clipMiddle('short', 24), 'short');
  const columns = [{ header: 'ID' }, { header: 'CMD', clip: 'middle', min: 10, shrink: 0, drop: 2 }, { header: 'X', drop: 1 }];
  assert.deepEqual(fitColumns(columns, [10, 50, 5], null), [10, 50, 5]);
  assert.deepEqual(fitColumns(columns, [10, 50, 5], 80), [10, 50, 5]); // 69 columns fit
  assert.deepEqual(fitColumns(columns, [10, 50, 5], 40), [10, 21, 5]);
  assert.deepEqual(fitColumns(columns, [10, 50, 5], 25), [10, 13, -1]); // X left out before CMD goes below 10
  assert.deepEqual(fitColumns(columns, [10, 50, 5], 12), [10, -1, -1]);
});

test('globs: *, ?, [...], [!...]; everything else literal', () => {
  assert.ok(globToRegExp('mem*').test('memory'));
  assert.ok(!globToRegExp('mem*').test('a-memory'));
  assert.ok(globToRegExp('file?').test('files'));
  assert.ok(globToRegExp('[fu]*').test('uvx'));
  assert.ok(!globToRegExp('[!fu]*').test('uvx'));
  assert.ok(globToRegExp('a.b(c)+').test('a.b(c)+'));
  assert.ok(!globToRegExp('a.b').test('axb'));
});
