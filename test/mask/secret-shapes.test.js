// The matchers' contract with the streaming redactor: a bounded window, and
// an answer that never changes once given, however many more bytes arrive.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { matchWordStart, matchPemBegin, findPemEnd, MAX_WINDOW, NEED, NO } from '../../dist/mask/secret-shapes.js';

const STARTS = [
  'ghp_',
  'github_pat_',
  'glpat-',
  'sk-',
  'sk_live_',
  'xoxb-',
  'AKIA',
  'AIza',
  'npm_',
  'hf_',
  'pypi-',
  'Authorization',
  'COOKIE',
  'api-key',
  'Bearer',
  'bearer ',
  'eyJ',
  '-----BEGIN ',
  '-----BEGIN RSA PRIVATE KEY-----',
];
const BODY = fc.constantFrom('a', 'Z', '9', '_', '-', '.', ' ', ':', '"', '\n', 'eyJ', 'PRIVATE KEY', '-----', 'A'.repeat(40));

function decide(buf, end, eof) {
  const r = buf[0] === 0x2d ? matchPemBegin(buf, 0, end, eof) : matchWordStart(buf, 0, end, eof);
  return typeof r === 'number' ? r : `${r.keep}/${r.end}/${r.then}/${r.replacement}`;
}

test('an answer needs at most MAX_WINDOW bytes and never changes with more bytes', () => {
  fc.assert(
    fc.property(fc.constantFrom(...STARTS), fc.array(BODY, { maxLength: 40 }), (start, body) => {
      const buf = Buffer.from(start + body.join(''));
      const full = decide(buf, buf.length, true);
      let first = null;
      for (let end = 1; end <= buf.length; end++) {
        const r = decide(buf, end, false);
        if (r === NEED) {
          assert.ok(end < MAX_WINDOW, `NEED with ${end} bytes`);
          continue;
        }
        first ??= r;
        assert.equal(r, first, `answer changed at ${end}`);
      }
      if (first !== null) assert.equal(full, first);
      assert.notEqual(full, NEED);
    }),
    { numRuns: 3000 },
  );
});

test('the end of a PEM block is found, or held for, across any cut', () => {
  const text = Buffer.from('MIIB\nxyz\n-----END RSA PRIVATE KEY-----\nafter');
  const endAt = text.indexOf('after');
  for (let cut = 0; cut <= text.length; cut++) {
    const r = findPemEnd(text, 0, cut, false);
    if (cut >= endAt - 1) assert.equal(r, endAt - 1, `cut ${cut}`);
    else if (r !== NO) assert.ok(r <= -2 && -r - 2 === text.indexOf('-----END'), `cut ${cut}: ${r}`);
  }
  assert.equal(findPemEnd(Buffer.from('-----END CERTIFICATE-----\n'), 0, 26, false), NO);
});
