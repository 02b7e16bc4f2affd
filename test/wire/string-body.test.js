// The string-body check (src/wire/wasm/string-body.wat, through string-body.ts's
// check()) against the scanner's own resumable string loop (StringResume, the
// path used where WebAssembly is missing) and a byte-at-a-time reference
// written here from the grammar: the exact same answer (offset past the
// closing quote, where to resume, or invalid) for every input and every point
// where the bytes so far may end. The WebAssembly loop handles all special
// bytes of a 32-byte block from one mask and \uXXXX escapes inline, so the
// cases put each special byte at every position of a block and across block,
// read and copy (slice) edges. The reference is itself checked against the
// reference scanner (test/wire/reference/) on every complete string.
// MCPGUARD_SCAN_DIFF_RUNS raises the number of random runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { StringResume, isScanError } from '../../dist/wire/json-scan.js';
import { stringBodyCheck, sliceEdges, INVALID_STRING } from '../../dist/wire/wasm/string-body.js';
import { scanJson as referenceScan } from './reference/json-scan-be66652.js';

const RUNS = Number(process.env.MCPGUARD_SCAN_DIFF_RUNS ?? 1500);
const simd = stringBodyCheck();

const HEX = /^[0-9a-fA-F]$/;
const SIMPLE = new Set([...'"\\/bfnrt'].map((c) => c.charCodeAt(0)));

/** The contract of check(), one byte at a time: past the closing quote, -(k + 1) to resume at k, or 0 (invalid). */
function reference(buf, at, end) {
  const unit = (p) => {
    const digits = String.fromCharCode(buf[p + 2], buf[p + 3], buf[p + 4], buf[p + 5]);
    return [...digits].every((d) => HEX.test(d)) ? Number.parseInt(digits, 16) : -1;
  };
  let i = at;
  for (;;) {
    if (i >= end) return -(i + 1);
    const c = buf[i];
    if (c === 0x22) return i + 1;
    if (c < 0x20) return 0;
    if (c !== 0x5c) {
      i++;
      continue;
    }
    if (i + 1 >= end) return -(i + 1);
    const e = buf[i + 1];
    if (SIMPLE.has(e)) {
      i += 2;
      continue;
    }
    if (e !== 0x75) return 0;
    if (i + 6 > end) return -(i + 1);
    const u = unit(i);
    if (u < 0 || (u >= 0xdc00 && u <= 0xdfff)) return 0;
    if (u >= 0xd800 && u <= 0xdbff) {
      if (i + 12 > end) return -(i + 1);
      if (buf[i + 6] !== 0x5c || buf[i + 7] !== 0x75) return 0;
      const low = unit(i + 6);
      if (low < 0xdc00 || low > 0xdfff) return 0;
      i += 12;
      continue;
    }
    i += 6;
  }
}

function viaResume(buf, at, end) {
  try {
    return new StringResume(buf, end).resume(at);
  } catch (error) {
    if (isScanError(error)) return INVALID_STRING;
    throw error;
  }
}

/**
 * `body` fed as it would arrive, the bytes so far ending at each of `cuts`
 * (then all of it), each way: the answers after every piece must be equal.
 * `body[0]` is the byte after the opening quote.
 */
function sameEverywhere(body, cuts, label) {
  const ways = { wasm: (b, at, end) => simd.check(b, at, end), resume: viaResume, reference };
  const trail = {};
  for (const [name, check] of Object.entries(ways)) {
    const answers = [];
    let at = 0;
    for (const cut of [...cuts.filter((c) => c > 0 && c < body.length), body.length]) {
      if (cut < at) continue;
      const result = check(body.subarray(0, cut), at, cut);
      answers.push(`${cut}:${result}`);
      if (result >= 0) break; // closed or invalid: nothing more to feed
      at = -result - 1;
    }
    trail[name] = answers.join(' ');
  }
  assert.equal(trail.wasm, trail.reference, `${label}: WebAssembly vs reference`);
  assert.equal(trail.resume, trail.reference, `${label}: StringResume vs reference`);
}

/** The reference's verdict on a whole string is the reference scanner's. */
function referenceAgreesWithScanner(body, label) {
  const quoted = Buffer.concat([Buffer.from('"'), body]);
  const past = reference(quoted, 1, quoted.length);
  if (past > 0) assert.equal(referenceScan(quoted, 0, past).ok, true, `${label}: reference says valid up to ${past}`);
  else if (past === 0) assert.equal(referenceScan(quoted, 0, quoted.length).ok, false, `${label}: reference says invalid`);
}

const ascii = (n) => 'abcdefghijklmnopqrstuvwxyz0123456789 .,;:!?-_(){}[]'.repeat(Math.ceil(n / 50) + 1).slice(0, n);
// Multibyte filler: bytes >= 0x80 must never count as special (the SIMD control compare is unsigned).
const multibyte = (n) => Buffer.from('üé数据😀✓'.repeat(n)).subarray(0, n);
const fillers = [(n) => Buffer.from(ascii(n)), multibyte];

const TOKENS = [
  // valid
  '\\"',
  '\\\\',
  '\\/',
  '\\b',
  '\\f',
  '\\n',
  '\\r',
  '\\t',
  '\\u00e9',
  '\\u0000',
  '\\uFFFF',
  '\\uD83D\\uDE00',
  '\\udbff\\udfff',
  '\\\\\\"',
  '\\\\\\\\',
  '\\"\\"\\"',
  '\\n\\t\\u0041\\\\',
  // the closing quote
  '"',
  // invalid
  '\\x',
  '\\U0041',
  '\\u12g4',
  '\\u12"4',
  '\\u1\\n4',
  '\\ud800',
  '\\udc00',
  '\\ud800\\u0041',
  '\\ud800x',
  '\\ud800\\n',
  '\\\\\\x',
]
  .map((t) => Buffer.from(t))
  .concat([[0x01], [0x1f], [0x00], [0x5c, 0x01], [0x5c, 0xc3, 0xbc], [0x5c, 0x20], [0x7f], [0x5c, 0x7f]].map((b) => Buffer.from(b)));

test('the embedded module is the .wat compiled (node src/wire/wasm/build-module.mjs regenerates it)', () => {
  const script = fileURLToPath(new URL('../../src/wire/wasm/build-module.mjs', import.meta.url));
  // Throws (exit 1) when string-body.ts's MODULE differs from wabt's output for the .wat.
  execFileSync(process.execPath, [script, '--check'], { stdio: 'pipe', timeout: 60_000 });
});

test('the SIMD string check is available here (otherwise nothing below tests it)', () => {
  assert.notEqual(simd, null);
});

test('each special byte or escape at every position of the first blocks, cut everywhere around it', () => {
  for (const fill of fillers) {
    for (const token of TOKENS) {
      for (let p = 0; p <= 100; p++) {
        const body = Buffer.concat([fill(p), token, fill(45), Buffer.from('"'), Buffer.from('tail"')]);
        const label = `${JSON.stringify(token.toString('latin1'))} at ${p} (${fill === multibyte ? 'multibyte' : 'ASCII'})`;
        referenceAgreesWithScanner(body, label);
        sameEverywhere(body, [], label);
        const cuts = [];
        for (let c = p - 1; c <= p + token.length + 1; c++) cuts.push(c);
        sameEverywhere(body, cuts, `${label}, cut around it`);
        for (const c of cuts) sameEverywhere(body, [c], `${label}, cut at ${c}`);
      }
    }
  }
});

test('two escapes (or an escape and the end) anywhere in one block or the next', () => {
  const some = ['\\"', '\\\\', '\\n', '\\u00e9', '\\uD83D\\uDE00', '"', '\\x', '\x01'].map((t) => Buffer.from(t));
  for (const a of some) {
    for (const b of some) {
      for (let p = 0; p < 40; p++) {
        for (let gap = 0; gap < 40; gap++) {
          const body = Buffer.concat([Buffer.from(ascii(p)), a, Buffer.from(ascii(gap)), b, Buffer.from(ascii(30)), Buffer.from('"')]);
          const label = `${JSON.stringify(a.toString())} at ${p}, ${JSON.stringify(b.toString())} ${gap} later`;
          referenceAgreesWithScanner(body, label);
          sameEverywhere(body, [], label);
        }
      }
    }
  }
});

test('runs of backslashes of every length ending at every block position', () => {
  for (let run = 1; run <= 70; run++) {
    for (let p = 0; p < 40; p++) {
      for (const after of ['"', 'n', 'x', 'u0041', '"x"']) {
        const body = Buffer.from(`${ascii(p)}${'\\'.repeat(run)}${after}${ascii(40)}"`);
        const label = `${run} backslashes at ${p} then ${after}`;
        referenceAgreesWithScanner(body, label);
        sameEverywhere(body, [], label);
        sameEverywhere(body, [p + run - 1, p + run, p + run + 1], `${label}, cut at the run's end`);
      }
    }
  }
});

test('escape-dense text across the slices check() copies into the module, cut or not', () => {
  const dense = '\\n\\"ab\\\\\\u00e9\\t\\uD83D\\uDE00x\\/';
  // Copies start small and double (a short string costs a short copy): the first edges, the last below 64 KiB, the next.
  const edges = sliceEdges(0, 200_000);
  assert.ok(edges.length > 4);
  for (const before of [...edges.slice(0, 3), ...edges.slice(-3)].map((edge) => edge - 35)) {
    for (let shift = 0; shift < 40; shift++) {
      const body = Buffer.from(`${ascii(before + shift)}${dense.repeat(4)}${ascii(100)}"`);
      const label = `dense escapes from ${before + shift}`;
      sameEverywhere(body, [], label);
      sameEverywhere(body, [before + shift + 7, before + shift + 50], `${label}, cut inside`);
    }
    for (const bad of ['\\x', '\x01', '\\udc00', '\\ud800\\n']) {
      for (let shift = 0; shift < 40; shift++) {
        const body = Buffer.from(`${ascii(before)}${dense.repeat(2)}${ascii(shift)}${bad}${ascii(50)}"`);
        sameEverywhere(body, [], `${JSON.stringify(bad)} after dense escapes near ${before}, +${shift}`);
      }
    }
  }
});

const piece = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: 40 }).map((n) => Buffer.from(ascii(n))) },
  { weight: 1, arbitrary: fc.integer({ min: 40, max: 300 }).map((n) => Buffer.from(ascii(n))) },
  { weight: 2, arbitrary: fc.constantFrom('ü', '数据', '😀', '\u2028').map((t) => Buffer.from(t)) },
  {
    weight: 8,
    arbitrary: fc
      .constantFrom('\\n', '\\"', '\\\\', '\\/', '\\b', '\\f', '\\r', '\\t', '\\u00e9', '\\u0000', '\\uD83D\\uDE00', '\\\\"')
      .map((t) => Buffer.from(t)),
  },
  { weight: 1, arbitrary: fc.constantFrom('\\ud800', '\\udc00', '\\ud800\\u0041', '\\x', '\\u12g4', '\\', '"').map((t) => Buffer.from(t)) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x1f }).map((b) => Buffer.from([b])) },
);

test('random escape-dense bodies in random pieces', () => {
  fc.assert(
    fc.property(fc.array(piece, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 12 }), (parts, picks) => {
      const body = Buffer.concat([...parts, Buffer.from('"')]);
      const cuts = [...new Set(picks.map((p) => p % body.length))].sort((a, b) => a - b);
      referenceAgreesWithScanner(body, 'random');
      sameEverywhere(body, cuts, `random body ${body.toString('hex')} cut at ${cuts}`);
    }),
    { numRuns: RUNS },
  );
});
