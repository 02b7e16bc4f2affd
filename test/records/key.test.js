import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAuditKey } from '../../dist/records/key.js';

const root = mkdtempSync(join(tmpdir(), 'mcpguard-key-'));
after(() => rmSync(root, { recursive: true, force: true }));
const recordDir = join(root, 'records');
mkdirSync(recordDir);
const key = Buffer.from('0123456789abcdef0123456789abcdef\n');

test('reads the key file as raw bytes (a trailing newline is part of the key)', () => {
  const file = join(root, 'audit.key');
  writeFileSync(file, key);
  assert.deepEqual(loadAuditKey(file, recordDir), key);
  // The record directory need not exist yet.
  assert.deepEqual(loadAuditKey(file, join(root, 'not-yet', 'records')), key);
});

test('refuses a key inside the record directory, also through a symlink or a ../ path', () => {
  const inside = join(recordDir, 'sub', 'audit.key');
  mkdirSync(join(recordDir, 'sub'));
  writeFileSync(inside, key);
  assert.throws(
    () => loadAuditKey(inside, recordDir),
    (e) => e.code === 'ERR_RECORD_KEY' && /--audit-key-file .* is inside the record directory/.test(e.message),
  );
  assert.throws(() => loadAuditKey(join(root, 'x', '..', 'records', 'sub', 'audit.key'), recordDir), { code: 'ERR_RECORD_KEY' });
  const link = join(root, 'link.key');
  symlinkSync(inside, link);
  assert.throws(() => loadAuditKey(link, recordDir), /inside the record directory/);
  const linkedDir = join(root, 'records-link');
  symlinkSync(recordDir, linkedDir);
  assert.throws(() => loadAuditKey(inside, linkedDir), /inside the record directory/);
  // A sibling whose name starts with the directory's name is outside.
  const sibling = join(root, 'records-other.key');
  writeFileSync(sibling, key);
  assert.deepEqual(loadAuditKey(sibling, recordDir), key);
});

test('refuses a missing, empty or short key file, naming the option and the file', () => {
  assert.throws(
    () => loadAuditKey(join(root, 'missing.key'), recordDir),
    (e) => e.code === 'ERR_RECORD_KEY' && /--audit-key-file cannot read '.*missing.key': ENOENT/.test(e.message),
  );
  const short = join(root, 'short.key');
  writeFileSync(short, 'hunter2');
  assert.throws(() => loadAuditKey(short, recordDir), /--audit-key-file '.*short.key' holds 7 bytes; use at least 16/);
  const empty = join(root, 'empty.key');
  writeFileSync(empty, '');
  assert.throws(() => loadAuditKey(empty, recordDir), /holds 0 bytes/);
});
