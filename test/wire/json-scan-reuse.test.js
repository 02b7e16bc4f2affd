// The scanner is reused from one scan to the next (dist/wire/json-scan.js keeps one
// idle Scanner and its stacks), and small objects' members live in an array
// behind get/has instead of a Map. What must hold whatever the reuse: a scan's
// verdict never depends on the scans before it, results handed out never
// change afterwards, members answer like a Map for any number of keys and for
// names an object literal would treat specially, and an idle scanner keeps no
// frame alive.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { scanJson } from '../../dist/wire/json-scan.js';
import { scanJson as referenceScan } from './reference/json-scan-be66652.js';
import { plain } from '../helpers/scan-plain.js';

const SCANNER_URL = new URL('../../dist/wire/json-scan.js', import.meta.url).href;

const SPECIAL = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'size', 'get', 'has', 'length', '0', ''];

describe('json-scan reuse', () => {
  test('a long string scanned after another long string is judged on its own bytes', () => {
    // The first scan leaves its memchr answers (next quote at 101) behind; the
    // second string's real quote comes earlier, followed by spaces.
    const first = Buffer.from(`"${'a'.repeat(100)}"`);
    const second = Buffer.from(`"${'b'.repeat(50)}"${' '.repeat(60)}`);
    assert.equal(scanJson(first).ok, true);
    assert.deepEqual(plain(scanJson(second)), plain(referenceScan(second)));
    assert.equal(scanJson(second).ok, true);
    // The same after a scan that failed in the middle of a long string and of nested objects.
    const broken = Buffer.from(`{"a":{"b":{"c":"${'x'.repeat(120)}\\q"}}}`);
    assert.equal(scanJson(broken).ok, false);
    assert.deepEqual(plain(scanJson(second)), plain(referenceScan(second)));
    const dup = Buffer.from('{"a":1,"a":2}');
    assert.deepEqual(plain(scanJson(dup)), plain(referenceScan(dup)));
  });

  test('results handed out do not change when later scans run', () => {
    const frames = [
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}',
      `{${Array.from({ length: 30 }, (_, i) => `"k${i}":{"n${i}":${i}}`).join(',')}}`,
      '[{"jsonrpc":"2.0","id":2,"method":"a"},{"jsonrpc":"2.0","method":"b","params":{"x":[1,2]}}]',
      '{"x":',
      '{"a":{"b":1,"b":2}}',
    ].map((s) => Buffer.from(s));
    const kept = frames.map((f) => scanJson(f));
    const snapshots = kept.map((r) => JSON.stringify(plain(r)));
    for (let round = 0; round < 3; round++) for (const f of [...frames].reverse()) scanJson(f);
    kept.forEach((r, i) => {
      assert.equal(JSON.stringify(plain(r)), snapshots[i], `frame ${i}`);
    });
    kept.forEach((r, i) => {
      assert.deepEqual(plain(r), plain(referenceScan(frames[i])), `frame ${i}`);
    });
  });

  test('members answer like a Map, for 0 to 40 keys and for special names', () => {
    for (let count = 0; count <= 40; count++) {
      const names = Array.from({ length: count }, (_, i) => SPECIAL[i] ?? `key${i}`);
      const text = `{${names.map((n, i) => `${JSON.stringify(n)}:{"v":${i}}`).join(',')}}`;
      const buf = Buffer.from(text);
      const result = scanJson(buf);
      assert.equal(result.ok, true, text);
      const members = result.value.members;
      const want = new Map(referenceScan(buf).value.members);
      assert.equal(members.size, want.size, text);
      assert.deepEqual([...members.keys()], [...want.keys()], text);
      for (const name of [...SPECIAL, 'key3', 'key39', 'missing', 'v']) {
        assert.equal(members.has(name), want.has(name), `${name} in ${text}`);
        assert.deepEqual(
          members.get(name) && plain({ ok: true, value: members.get(name) }),
          want.get(name) && plain({ ok: true, value: want.get(name) }),
          `${name} in ${text}`,
        );
      }
      // Nested members are recorded too, each object its own.
      for (const [name, node] of members) assert.deepEqual([...node.members.keys()], ['v'], name);
    }
  });

  test('a repeated key is found however many keys come before it, special names included', () => {
    for (let count = 1; count <= 40; count++) {
      for (const repeated of ['__proto__', 'constructor', 'key0', `key${count - 1}`]) {
        const names = Array.from({ length: count }, (_, i) =>
          (i === 0 && repeated === '__proto__') || (i === 1 && repeated === 'constructor') ? repeated : `key${i}`,
        );
        if (!names.includes(repeated)) continue;
        for (const spelled of [JSON.stringify(repeated), `"${[...repeated].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`]) {
          for (const nest of [(s) => s, (s) => `{"outer":${s}}`, (s) => `{"a":{"b":${s}}}`]) {
            const buf = Buffer.from(nest(`{${names.map((n) => `${JSON.stringify(n)}:1`).join(',')},${spelled}:2}`));
            const got = scanJson(buf);
            assert.equal(got.ok, false, buf.toString());
            assert.deepEqual(got, referenceScan(buf), buf.toString());
          }
        }
      }
    }
  });

  test('random objects near the top: same members and verdicts as the reference, scan after scan', () => {
    const key = fc.constantFrom(...SPECIAL, 'a', 'b', 'id', 'method', 'params', 'x\\u0041', 'xA');
    const leaf = fc.constantFrom('1', '"s"', 'true', 'null', '[]', '{}', '[1,{"a":2}]', '"\\u00e9"');
    const value = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leaf, tie('object')),
      object: fc.array(fc.tuple(key, tie('value')), { maxLength: 12 }).map((members) => `{${members.map(([k, v]) => `"${k}":${v}`).join(',')}}`),
    })).object;
    fc.assert(
      fc.property(fc.array(value, { minLength: 1, maxLength: 4 }), (texts) => {
        // Several scans in a row through the reused scanner, each compared on its own.
        for (const text of texts) {
          const buf = Buffer.from(text);
          assert.deepEqual(plain(scanJson(buf)), plain(referenceScan(buf)), text);
        }
      }),
      { numRuns: 3000 },
    );
  });

  test('the idle scanner keeps no frame alive', { timeout: 60_000 }, () => {
    // In a child with --expose-gc: scan a 4 MiB frame with long strings (the
    // long-run path makes a word view of it for runs under 1 KiB), drop it, collect, and see it gone.
    const script = `
      import { scanJson } from ${JSON.stringify(SCANNER_URL)};
      let frame = Buffer.from(JSON.stringify({ a: 'x'.repeat(4 << 20), b: ['y'.repeat(5000)], c: 'z'.repeat(200) }));
      const ok = scanJson(frame).ok;
      const ref = new WeakRef(frame.buffer);
      frame = undefined;
      await new Promise((r) => setTimeout(r, 10));
      globalThis.gc(); globalThis.gc();
      await new Promise((r) => setTimeout(r, 10));
      globalThis.gc();
      console.log(JSON.stringify({ ok, alive: ref.deref() !== undefined }));
    `;
    const run = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 50_000, killSignal: 'SIGKILL' });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { ok: true, alive: false });
  });
});
