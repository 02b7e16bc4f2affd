// The strict scanner (dist/wire/json-scan.js) and the line classification built on it.
//
// test/wire/corpus/rejected-client.jsonl is the corpus of rejected client lines, one
// JSON object per line: {"name": "...", "frame_b64": "<the line's bytes, base64,
// WITHOUT its trailing \n>", "code": -32700 | -32600 | -32602}. Codes are for the
// client direction with batches off (the default). After every real defect, add
// a line (e.g. `node -e 'console.log(JSON.stringify({name, frame_b64: Buffer.from(line).toString("base64"), code}))'`).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { MAX_DEPTH, nodeText, scanJson, stringValue } from '../../dist/wire/json-scan.js';
import { classifyFrame } from '../../dist/wire/jsonrpc.js';
import { FIXTURES, ROOT, frame, killStarted, readLines, runGuard, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const CORPUS_PATH = join(ROOT, 'test', 'wire', 'corpus', 'rejected-client.jsonl');
const CORPUS = readFileSync(CORPUS_PATH, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l, i) => {
    const entry = JSON.parse(l);
    return { ...entry, lineNo: i + 1, bytes: Buffer.from(entry.frame_b64, 'base64') };
  });
const withNewline = (bytes) => Buffer.concat([Buffer.from(bytes), Buffer.from('\n')]);
const classify = (bytes) => classifyFrame(withNewline(bytes), { allowBatch: false });

/** Object nesting `depth` deep in total (the message itself is level 1). */
const nestedObjects = (depth) => {
  let inner = '{}';
  for (let i = 0; i < depth - 3; i++) inner = `{"a":${inner}}`;
  return `{"jsonrpc":"2.0","id":1,"method":"x","params":{"deep":${inner}}}`;
};
const nestedArrays = (depth) => `{"jsonrpc":"2.0","id":1,"method":"x","params":{"deep":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;

describe('corpus of rejected client lines', () => {
  test('the corpus file is well-formed', () => {
    assert.ok(CORPUS.length >= 30, `only ${CORPUS.length} cases`);
    const names = new Set();
    for (const e of CORPUS) {
      assert.deepEqual(
        Object.keys(e)
          .filter((k) => !['lineNo', 'bytes'].includes(k))
          .sort(),
        ['code', 'frame_b64', 'name'],
        `line ${e.lineNo}`,
      );
      assert.ok(typeof e.name === 'string' && e.name.length > 0 && !names.has(e.name), `line ${e.lineNo}: name must be unique`);
      names.add(e.name);
      assert.ok([-32700, -32600, -32602].includes(e.code), `line ${e.lineNo}: code`);
      assert.equal(e.bytes.toString('base64'), e.frame_b64, `line ${e.lineNo}: frame_b64 is canonical base64`);
      assert.equal(e.bytes.indexOf(0x0a), -1, `line ${e.lineNo}: a frame holds no newline`);
    }
  });

  for (const e of CORPUS) {
    test(`${e.name} → ${e.code}`, () => {
      const got = classify(e.bytes);
      assert.equal(got.kind, 'invalid', `accepted: ${JSON.stringify(e.bytes.toString('latin1'))}`);
      assert.equal(got.code, e.code, got.reason);
      // A parse error is exactly a line that is not UTF-8 or not one strict JSON value.
      const scanned = isUtf8(e.bytes) ? scanJson(e.bytes).ok : false;
      assert.equal(e.code === -32700, !scanned, got.reason);
    });
  }

  test('through the real binary: no corpus line reaches the child, each is answered with its code', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const lines = join(dir, 'lines');
      const input = Buffer.concat([...CORPUS.map((e) => withNewline(e.bytes)), Buffer.from(frame({ jsonrpc: '2.0', id: 'last', method: 'ping' }))]);
      const { done } = runGuard(['--on-invalid=reject', '--', 'python3', join(FIXTURES, 'recorder.py')], { input, env: { RECORD_LINES: lines } });
      const r = await done;
      assert.deepEqual(readLines(lines), ['{"jsonrpc":"2.0","id":"last","method":"ping"}'], 'only the ping reached the child');
      const out = messages(r.stdout);
      assert.deepEqual(
        out.slice(0, CORPUS.length).map((m) => m.error?.code),
        CORPUS.map((e) => e.code),
      );
      assert.deepEqual(out.slice(CORPUS.length), [{ jsonrpc: '2.0', id: 'last', result: {} }]);
      assert.equal(r.code, 0, r.stderr);
    } finally {
      cleanup();
    }
  });
});

describe('accepted lines', () => {
  const ACCEPTED = [
    { name: 'a plain request', line: '{"jsonrpc":"2.0","id":1,"method":"ping"}', kind: 'request', id: 1 },
    {
      name: 'whitespace everywhere JSON allows it, \\r before the newline',
      line: ' \t{ "jsonrpc" : "2.0" ,\t"id" : "a" , "method" : "ping" }\r',
      kind: 'request',
      id: 'a',
    },
    // Lone surrogate escapes are refused (I-JSON, RFC 7493): see the corpus. A proper pair is text.
    { name: 'a surrogate pair escape', line: '{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"x"}', kind: 'request', id: '😀' },
    { name: 'every simple escape', line: '{"jsonrpc":"2.0","id":"\\"\\\\\\/\\b\\f\\n\\r\\t","method":"x"}', kind: 'request', id: '"\\/\b\f\n\r\t' },
    { name: 'raw non-ASCII and DEL inside strings', line: '{"jsonrpc":"2.0","id":"é€😀\u007f","method":"x"}', kind: 'request', id: 'é€😀\u007f' },
    { name: 'member names written with escapes', line: '{"\\u006asonrpc":"2.0","\\u0069d":2,"meth\\u006fd":"x"}', kind: 'request', id: 2 },
    { name: 'keys differing only by escape-free case', line: '{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1,"A":2}}', kind: 'request', id: 1 },
    { name: 'the same key in sibling objects', line: '{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"k":1},"b":{"k":1}}}', kind: 'request', id: 1 },
    { name: 'id -0 (an integer, read as 0)', line: '{"jsonrpc":"2.0","id":-0,"method":"x"}', kind: 'request', id: 0 },
    { name: 'id 2^53-1', line: '{"jsonrpc":"2.0","id":9007199254740991,"method":"x"}', kind: 'request', id: 9007199254740991 },
    { name: 'id -(2^53-1)', line: '{"jsonrpc":"2.0","id":-9007199254740991,"method":"x"}', kind: 'request', id: -9007199254740991 },
    { name: 'id an empty string', line: '{"jsonrpc":"2.0","id":"","method":""}', kind: 'request', id: '' },
    {
      name: 'numbers of every form inside params',
      line: '{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":[0,-0,1.5,-2.25e-3,1E400,6.02E+23,123456789012345678901234567890]}}',
      kind: 'request',
      id: 1,
    },
    { name: 'a notification with empty params', line: '{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}', kind: 'notification' },
    {
      name: 'a result object holding values of every JSON type',
      line: '{"jsonrpc":"2.0","id":7,"result":{"v":[null,true,false,1.5e3,"s",{}]}}',
      kind: 'response',
      id: 7,
    },
    {
      name: 'an error response with data',
      line: '{"jsonrpc":"2.0","id":"r","error":{"code":-32601,"message":"nope","data":{"x":[1]}}}',
      kind: 'response',
      id: 'r',
    },
    { name: `object nesting of exactly MAX_DEPTH (${MAX_DEPTH})`, line: nestedObjects(MAX_DEPTH), kind: 'request', id: 1 },
    { name: `array nesting of exactly MAX_DEPTH (${MAX_DEPTH})`, line: nestedArrays(MAX_DEPTH), kind: 'request', id: 1 },
  ];
  for (const a of ACCEPTED) {
    test(a.name, () => {
      const got = classify(Buffer.from(a.line));
      assert.equal(got.kind, a.kind, got.reason);
      if ('id' in a) {
        // An id whose spelling no JS value prints back (escapes, -0) is kept as a RawId: its value, and its original text.
        const raw = got.id !== null && typeof got.id === 'object';
        assert.equal(raw ? got.id.value : got.id, a.id);
        if (raw)
          assert.ok(
            a.line.includes(`"id":${got.id.text},`) || a.line.includes(`"\\u0069d":${got.id.text},`),
            `the id's text ${got.id.text} is what the line holds`,
          );
      }
      assert.ok(got.frame.equals(withNewline(Buffer.from(a.line))), 'the original bytes are kept');
    });
  }

  test('nesting one beyond MAX_DEPTH is rejected, for arrays too', () => {
    assert.equal(classify(Buffer.from(nestedObjects(MAX_DEPTH + 1))).code, -32700);
    assert.equal(classify(Buffer.from(nestedArrays(MAX_DEPTH + 1))).code, -32700);
  });

  test('batches: accepted only with allowBatch; an empty one never', () => {
    const batch = Buffer.from('[{"jsonrpc":"2.0","id":1,"method":"x"},{"jsonrpc":"2.0","method":"n"}]\n');
    const got = classifyFrame(batch, { allowBatch: true });
    assert.equal(got.kind, 'batch');
    assert.deepEqual(
      got.items.map((i) => i.kind),
      ['request', 'notification'],
    );
    assert.equal(classifyFrame(Buffer.from('[]\n'), { allowBatch: true }).code, -32600);
  });
});

describe('scanJson', () => {
  test('spans and recorded members', () => {
    const buf = Buffer.from('{"a":[1,{"b":2}],"c":"x\\u0041"}');
    const r = scanJson(buf);
    assert.equal(r.ok, true);
    assert.deepEqual([r.value.type, r.value.start, r.value.end], ['object', 0, buf.length]);
    assert.deepEqual([...r.value.members.keys()], ['a', 'c']);
    assert.equal(nodeText(buf, r.value.members.get('a')), '[1,{"b":2}]');
    assert.equal(stringValue(buf, r.value.members.get('c')), 'xA');
  });

  test('a sub-range of a buffer, surrounded by whitespace', () => {
    const buf = Buffer.from('xx \t 12.5e3 \r\nyy');
    const r = scanJson(buf, 2, buf.length - 2);
    assert.equal(r.ok, true);
    assert.equal(nodeText(buf, r.value), '12.5e3');
  });

  test('failures are values with a reason and the offset of the bad byte', () => {
    assert.deepEqual(scanJson(Buffer.from('{"a":1,"a":2}')), { ok: false, reason: 'duplicate key "a"', offset: 7 });
    const trailing = scanJson(Buffer.from('{} x'));
    assert.equal(trailing.ok, false);
    assert.equal(trailing.offset, 3);
  });

  test('100 000 open brackets: rejected without exhausting the stack', () => {
    for (const open of ['[', '{"a":']) {
      const r = scanJson(Buffer.from(open.repeat(100000)));
      assert.equal(r.ok, false);
      assert.match(r.reason, /nesting deeper than 512/);
    }
  });

  test('everything JSON.stringify writes is accepted, compact or indented (fast-check)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: 'binary' }), fc.constantFrom(undefined, 1, '\t', ' \r\n'), (value, indent) => {
        // Indentation with \r\n is not JSON.stringify's, but it is JSON whitespace.
        const text = indent === ' \r\n' ? JSON.stringify(value, null, 1).replaceAll('\n', '\r\n') : JSON.stringify(value, null, indent);
        const r = scanJson(Buffer.from(text));
        assert.equal(r.ok, true, `${r.reason}: ${text}`);
        const type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value === 'boolean' ? String(value) : typeof value;
        assert.equal(r.value.type, type);
      }),
      { numRuns: 1000 },
    );
  });

  test('duplicate keys are found at any depth, in small and large objects, however the keys are spelled (fast-check)', () => {
    // Keys from a tiny alphabet, so that repeats are common; each character written
    // raw, as \u escapes, or ('/' only) as \/. Objects of up to 40 keys cross the
    // scanner's switch from comparing raw bytes to a set of decoded keys.
    const spell = (key, modes) =>
      [...key]
        .map((ch, i) => {
          const mode = modes[i % modes.length];
          if (mode === 1) return [...Array(ch.length).keys()].map((u) => `\\u${ch.charCodeAt(u).toString(16).padStart(4, '0')}`).join('');
          if (mode === 2 && ch === '/') return '\\/';
          return ch;
        })
        .join('');
    const key = fc
      .tuple(fc.array(fc.constantFrom('a', 'b', '/', 'é', '😀'), { maxLength: 2 }), fc.array(fc.nat(2), { minLength: 3, maxLength: 3 }))
      .map(([chars, modes]) => ({ key: chars.join(''), text: spell(chars.join(''), modes) }));
    const { obj } = fc.letrec((tie) => ({
      obj: fc.array(fc.tuple(key, fc.oneof({ depthSize: 'small' }, fc.integer(), tie('obj'))), { maxLength: 40 }),
    }));
    const render = (v) => (Array.isArray(v) ? `{${v.map(([k, x]) => `"${k.text}":${render(x)}`).join(',')}}` : String(v));
    const hasDuplicate = (v) => Array.isArray(v) && (new Set(v.map(([k]) => k.key)).size < v.length || v.some(([, x]) => hasDuplicate(x)));
    let duplicates = 0;
    fc.assert(
      fc.property(obj, (o) => {
        const text = render(o);
        assert.doesNotThrow(() => JSON.parse(text), text);
        const r = scanJson(Buffer.from(text));
        const expected = !hasDuplicate(o);
        if (!expected) duplicates++;
        assert.equal(r.ok, expected, `${r.reason ?? 'accepted'}: ${text}`);
        if (!r.ok) assert.match(r.reason, /^duplicate key /);
      }),
      { numRuns: 2000 },
    );
    assert.ok(duplicates > 200 && duplicates < 1800, `cases with duplicates: ${duplicates}`);
  });

  test('member names and methods every message carries decode exactly, as do their near misses and escaped spellings', () => {
    const common = ['jsonrpc', '2.0', 'id', 'method', 'params', 'result', 'error', 'tools/call', 'notifications/cancelled', '_meta'];
    const variants = (s) => [
      s,
      `${s.slice(0, -1)}${String.fromCharCode(s.charCodeAt(s.length - 1) + 1)}`, // same length, last byte differs
      `${s}x`,
      s.slice(1),
      s.toUpperCase(),
      `é${s.slice(1)}`, // same char count, different bytes
    ];
    for (const s of common) {
      for (const v of variants(s)) {
        for (const text of [JSON.stringify(v), `"${[...v].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`]) {
          const r = scanJson(Buffer.from(`{${text}:${text}}`));
          assert.equal(r.ok, true, text);
          const [[key, node]] = [...r.value.members];
          assert.equal(key, v, `key ${text}`);
          assert.equal(stringValue(Buffer.from(`{${text}:${text}}`), node), v, `value ${text}`);
        }
      }
      // A common name and its escaped spelling are the same key.
      const escaped = [...s].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
      assert.equal(scanJson(Buffer.from(`{"${s}":1,"${escaped}":2}`)).ok, false, s);
      assert.equal(scanJson(Buffer.from(`{"${escaped}":1,"${s}":2}`)).ok, false, s);
      // The same name in a nested object is not a repeat; after it, the outer object's keys are still known.
      assert.equal(scanJson(Buffer.from(`{"${s}":{"${s}":{"${s}":1}},"x":2}`)).ok, true, s);
      assert.equal(scanJson(Buffer.from(`{"${s}":{"${s}":{"${s}":1}},"x":2,"${s}":3}`)).ok, false, s);
    }
  });

  test('strings: stringValue equals JSON.parse for any string JSON.stringify writes (fast-check)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (s) => {
        const buf = Buffer.from(JSON.stringify(s));
        const r = scanJson(buf);
        assert.equal(r.ok, true);
        assert.equal(stringValue(buf, r.value), JSON.parse(buf.toString('utf8')));
      }),
      { numRuns: 1000 },
    );
  });
});
