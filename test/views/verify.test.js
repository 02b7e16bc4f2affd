import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonical } from '../../dist/records/canonical.js';
import { SessionLog } from '../../dist/records/store.js';
import { verifyDir, verifyFile } from '../../dist/views/verify.js';

const root = mkdtempSync(join(tmpdir(), 'mcpguard-verify-'));
const children = new Set();
after(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});
const KEY = Buffer.from('k'.repeat(32));
let n = 0;

// A small but complete session, written through the API.
function sampleLog({ key, seal = true } = {}) {
  const log = SessionLog.create({ dir: join(root, `d${n++}`), fsync: false, key });
  log.append('session_start', { command: 'python', args: ['server.py'], cwd: '/srv', pid: 4242, started_at: '2026-11-29T11:22:33.000Z' });
  log.append('call_attempt', { call_id: 'c_000000000001', request_id: 1, method: 'tools/call', tool: 'echo' });
  log.append('call_end', { call_id: 'c_000000000001', state: 'completed', stderr_bytes_seen: 12, exit_status: null });
  log.append('reject', { direction: 'client', line: 2, code: -32700, reason: 'not JSON', fingerprint: { sha256_16: 'ab'.repeat(8), bytes: 9 } });
  if (seal) log.seal();
  return log.path;
}
const linesOf = (path) => readFileSync(path, 'utf8').split('\n').slice(0, -1);
const writeLines = (path, lines) => writeFileSync(path, lines.map((l) => `${l}\n`).join(''));
const verdict = (path, key) => {
  const r = verifyFile(path, key);
  return { status: r.status, line: r.line, records: r.records };
};

test('an intact log verifies, with or without HMAC', () => {
  const plain = sampleLog();
  assert.deepEqual(verifyFile(plain), {
    file: plain,
    status: 'ok',
    records: 6,
    line: null,
    reason: null,
    log_id: plain.split('/').pop().slice(0, -6),
    alg: 'sha256',
  });
  const keyed = sampleLog({ key: KEY });
  assert.deepEqual(verdict(keyed, KEY), { status: 'ok', line: null, records: 6 });
  assert.equal(verifyFile(keyed, KEY).alg, 'hmac-sha256');
});

for (const key of [undefined, KEY]) {
  test(`bit-flip sweep (${key ? 'hmac-sha256' : 'sha256'}): every single-bit change anywhere in the file is detected`, () => {
    const path = sampleLog({ key });
    const original = readFileSync(path);
    const missed = [];
    const statuses = {};
    for (let i = 0; i < original.length; i++) {
      for (let bit = 0; bit < 8; bit++) {
        const copy = Buffer.from(original);
        copy[i] ^= 1 << bit;
        writeFileSync(path, copy);
        const { status } = verifyFile(path, key);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if (status === 'ok') missed.push(`byte ${i} bit ${bit}`);
      }
    }
    assert.deepEqual(missed, []);
    // Only flips of the final newline may read as a torn tail; everything else is tampering (or a key mismatch in the header).
    assert.ok((statuses.torn ?? 0) <= 8, JSON.stringify(statuses));
    assert.equal(statuses.unsealed, undefined);
    assert.equal(
      Object.values(statuses).reduce((a, b) => a + b),
      original.length * 8,
    );
  });
}

test('deleting any record is detected at its position; deleting the seal reads as unsealed', () => {
  const path = sampleLog();
  const lines = linesOf(path);
  for (let k = 0; k < lines.length; k++) {
    writeLines(
      path,
      lines.filter((_, i) => i !== k),
    );
    const expected = k === lines.length - 1 ? { status: 'unsealed', line: null, records: k } : { status: 'tampered', line: k + 1, records: k };
    assert.deepEqual(verdict(path), expected, `delete ${k}`);
  }
});

test('swapping any two adjacent records is detected', () => {
  const path = sampleLog();
  const lines = linesOf(path);
  for (let k = 0; k + 1 < lines.length; k++) {
    const swapped = [...lines];
    [swapped[k], swapped[k + 1]] = [swapped[k + 1], swapped[k]];
    writeLines(path, swapped);
    assert.deepEqual(verdict(path), { status: 'tampered', line: k + 1, records: k }, `swap ${k}`);
  }
  const reversed = [...lines].reverse();
  writeLines(path, reversed);
  assert.equal(verdict(path).status, 'tampered');
});

test('duplicating any record is detected', () => {
  const path = sampleLog();
  const lines = linesOf(path);
  for (let k = 0; k < lines.length; k++) {
    writeLines(path, [...lines.slice(0, k + 1), lines[k], ...lines.slice(k + 1)]);
    const r = verifyFile(path);
    assert.deepEqual([r.status, r.line], ['tampered', k + 2], `duplicate ${k}`);
    if (k === lines.length - 1) assert.match(r.reason, /after the seal/);
    else assert.match(r.reason, k === 0 ? /second header/ : /expected seq/);
  }
});

test('a truncated tail reads as "ended without seal" on a line boundary, and as torn inside a line', () => {
  const path = sampleLog();
  const original = readFileSync(path);
  const lines = linesOf(path);
  for (let keep = 0; keep < lines.length; keep++) {
    writeLines(path, lines.slice(0, keep));
    const r = verifyFile(path);
    assert.deepEqual([r.status, r.records], ['unsealed', keep]);
    assert.match(r.reason, keep === 0 ? /empty file/ : /ended without seal: crash or truncation/);
  }
  const lastStart = original.length - lines.at(-1).length - 1;
  for (const cut of [1, 2, 10, lines.at(-1).length - 1, lines.at(-1).length]) {
    writeFileSync(path, original.subarray(0, lastStart + cut));
    assert.deepEqual(verdict(path), { status: 'torn', line: lines.length, records: lines.length - 1 }, `cut ${cut}`);
  }
});

test('in an unsealed log every record but the last is vouched for by the one after it (the documented limit)', () => {
  const path = sampleLog({ seal: false });
  const lines = linesOf(path);
  // A member added in canonical place: the edited line is still a well-formed record on its own.
  const edit = (k) => lines.map((l, i) => (i === k ? `${l.slice(0, -1)},"zz":1}` : l));
  for (let k = 0; k < lines.length - 1; k++) {
    writeLines(path, edit(k));
    assert.deepEqual(verdict(path), { status: 'tampered', line: k + 2, records: k + 1 }, `edit ${k}`);
  }
  // Nothing follows the last record, so an edit of it that keeps the line canonical cannot be seen.
  writeLines(path, edit(lines.length - 1));
  assert.deepEqual(verdict(path), { status: 'unsealed', line: null, records: lines.length });
});

test('a torn last line is torn, not tampering; a torn line anywhere else, or after the seal, is tampering', () => {
  const sealed = sampleLog();
  const sealLine = linesOf(sealed).at(-1);
  const path = sampleLog({ seal: false });
  const lines = linesOf(path);
  const fragment = sealLine.slice(0, 40); // the start of a record whose write was cut short
  writeFileSync(path, `${lines.join('\n')}\n${fragment}`);
  const torn = verifyFile(path);
  assert.deepEqual([torn.status, torn.line, torn.records], ['torn', lines.length + 1, lines.length]);
  assert.match(torn.reason, /incomplete/);
  // Torn header: the crash came before the first record was complete.
  writeFileSync(path, lines[0].slice(0, 30));
  assert.deepEqual(verdict(path), { status: 'torn', line: 1, records: 0 });
  // A cut line followed by more records: not what a crash leaves.
  writeFileSync(path, `${lines.slice(0, 3).join('\n')}\n${fragment}\n${lines.slice(3).join('\n')}\n`);
  assert.deepEqual(verdict(path), { status: 'tampered', line: 4, records: 3 });
  // Bytes after a seal are never a torn write: the writer does not write after sealing.
  writeFileSync(sealed, `${readFileSync(sealed, 'utf8')}${fragment}`);
  assert.equal(verdict(sealed).status, 'tampered');
  // An unterminated tail that cannot be the start of a record.
  writeFileSync(path, `${lines.join('\n')}\nGARBAGE`);
  assert.deepEqual(verdict(path), { status: 'tampered', line: lines.length + 1, records: lines.length });
});

// Continue a chain the way someone editing the file would: correct seq and prev (and hash, for a seal).
function forge(prevLine, fields, key) {
  const h = () => (key ? createHmac('sha256', key) : createHash('sha256'));
  const record = { ...fields, seq: JSON.parse(prevLine).seq + 1, prev: h().update(`${prevLine}\n`).digest('hex'), ts: '2026-11-29T11:22:34.000Z' };
  return fields.type === 'seal' ? canonical({ ...record, hash: h().update(canonical(record)).digest('hex') }) : canonical(record);
}

test('a hash on any record but the seal is tampering', () => {
  const path = sampleLog();
  const lines = linesOf(path);
  const record = JSON.parse(lines[2]);
  lines[2] = canonical({ ...record, hash: 'ab'.repeat(32) });
  writeLines(path, lines);
  const r = verifyFile(path);
  assert.deepEqual([r.status, r.line], ['tampered', 3]);
  assert.match(r.reason, /a record other than the seal carries a hash/);
});

test('a forged record appended after the seal is detected, even with a correct hash', () => {
  const path = sampleLog();
  const lines = linesOf(path);
  writeLines(path, [...lines, forge(lines.at(-1), { type: 'call_attempt', call_id: 'c_forged' })]);
  const r = verifyFile(path);
  assert.deepEqual([r.status, r.line], ['tampered', lines.length + 1]);
  assert.match(r.reason, /after the seal/);
});

test('re-sealing a rewritten tail: undetectable on a plain chain (the documented limit), detected on an HMAC chain', () => {
  const rewrite = (path, key) => {
    const lines = linesOf(path).slice(0, -1);
    lines.push(forge(lines.at(-1), { type: 'call_attempt', call_id: 'c_forged' }, key));
    lines.push(forge(lines.at(-1), { type: 'seal', records: lines.length + 1 }, key));
    writeLines(path, lines);
  };
  const plain = sampleLog();
  rewrite(plain);
  assert.equal(verdict(plain).status, 'ok');
  const keyed = sampleLog({ key: KEY });
  rewrite(keyed, Buffer.from('attacker-guess-attacker-guess!!'));
  assert.deepEqual(verdict(keyed, KEY), { status: 'tampered', line: 6, records: 5 });
  rewrite(keyed); // or rewritten as a plain chain
  assert.equal(verdict(keyed, KEY).status, 'tampered');
});

test('leading or trailing garbage, blank lines and CRLF are detected', () => {
  const path = sampleLog();
  const text = readFileSync(path, 'utf8');
  const cases = {
    'garbage line before the header': [`garbage\n${text}`, 1],
    'bytes before the header': [` ${text}`, 1],
    'blank first line': [`\n${text}`, 1],
    'garbage line after the seal': [`${text}garbage\n`, 7],
    'unterminated garbage after the seal': [`${text}garbage`, 7],
    'blank line after the seal': [`${text}\n`, 7],
    'blank line in the middle': [text.replace('\n', '\n\n'), 2],
    'CRLF line ends': [text.replaceAll('\n', '\r\n'), 1],
    'pretty-printed first record': [text.replace(/^[^\n]*/, (l) => JSON.stringify(JSON.parse(l), null, 1).replaceAll('\n', '')), 1],
  };
  for (const [name, [content, line]] of Object.entries(cases)) {
    writeFileSync(path, content);
    assert.deepEqual([verdict(path).status, verdict(path).line], ['tampered', line], name);
  }
});

test('wrong key, an HMAC chain checked without a key, and a plain chain checked with a key are reported', () => {
  const keyed = sampleLog({ key: KEY });
  const wrong = verifyFile(keyed, Buffer.from('w'.repeat(32)));
  assert.deepEqual([wrong.status, wrong.line], ['key', 1]);
  assert.match(wrong.reason, /wrong key: the chain was written with key_id [0-9a-f]{16}, the given key is [0-9a-f]{16}/);
  const keyless = verifyFile(keyed);
  assert.equal(keyless.status, 'key');
  assert.match(keyless.reason, /HMAC chain .* --audit-key-file/);
  const plain = verifyFile(sampleLog(), KEY);
  assert.equal(plain.status, 'key');
  assert.match(plain.reason, /plain sha256 chain, but a key was given/);
});

test('a log renamed to another session id is detected', () => {
  const path = sampleLog();
  const moved = join(root, 's_20991231T000000Z_00000000.jsonl');
  renameSync(path, moved);
  const r = verifyFile(moved);
  assert.deepEqual([r.status, r.line], ['tampered', 1]);
  assert.match(r.reason, /does not match the file name/);
});

test('verifyDir reports each file in name order, and unreadable files', () => {
  const dir = join(root, 'mixed');
  const a = SessionLog.create({ dir, fsync: false }, 's_a');
  a.seal();
  SessionLog.create({ dir, fsync: false }, 's_b');
  const c = SessionLog.create({ dir, fsync: false }, 's_c');
  c.seal();
  writeFileSync(c.path, readFileSync(c.path, 'utf8').replace('"s_c"', '"s_x"'));
  writeFileSync(join(dir, 'notes.txt'), 'not a log');
  assert.deepEqual(
    verifyDir(dir).map((r) => [r.file.split('/').pop(), r.status]),
    [
      ['s_a.jsonl', 'ok'],
      ['s_b.jsonl', 'unsealed'],
      ['s_c.jsonl', 'tampered'],
    ],
  );
  assert.equal(verifyFile(join(dir, 'nope.jsonl')).status, 'unreadable');
});

test('writers SIGKILLed in the middle of large records leave unsealed or torn logs, never tampered ones', { timeout: 30_000 }, async () => {
  const dir = join(root, 'killed');
  const source = `
    import { SessionLog } from ${JSON.stringify(new URL('../../dist/records/store.js', import.meta.url).href)};
    const log = SessionLog.create({ dir: ${JSON.stringify(dir)}, fsync: false });
    const pad = 'x'.repeat(4 << 20);
    log.append('big', { i: 0, pad });
    process.stderr.write('ready\\n');
    for (let i = 1; ; i++) log.append('big', { i, pad });`;
  const statuses = [];
  for (let round = 0; round < 6; round++) {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', 'ignore', 'pipe'] });
    children.add(child);
    await new Promise((resolve) => child.stderr.once('data', resolve));
    await new Promise((resolve) => setTimeout(resolve, 5 + round * 7));
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    children.delete(child);
  }
  for (const r of verifyDir(dir)) {
    assert.ok(r.status === 'unsealed' || r.status === 'torn', JSON.stringify(r));
    assert.ok(r.records >= 2, JSON.stringify(r));
    statuses.push(r.status);
  }
  assert.equal(statuses.length, 6);
  rmSync(dir, { recursive: true, force: true });
});
