/**
 * What a secret looks like in a byte stream, as small matchers that redact.ts
 * runs at candidate positions. Each matcher looks at a bounded window after
 * its start and answers with a match, NO, or NEED when that window runs past
 * the bytes it was given; the streaming redactor then holds those bytes back
 * until the next read decides. Bounded windows keep the hold-back bounded: a
 * match only has to be *confirmed* inside its window, and the unbounded rest (a
 * long token, a header line, a PEM body) is swallowed afterwards in a state
 * that needs no look-ahead.
 *
 * Shapes with a prefix must start a word (the byte before is not [A-Za-z0-9]),
 * which keeps `task-…` from looking like `sk-…` and keeps the scan cheap.
 *
 * `oneLine` is for one whole text known to be a single line (the JSON of a
 * tool call's arguments on an approval card): there a header's value and a
 * PEM block end where the secret ends (a credential token, a base64 body),
 * never at the end of the line, which would be the end of the arguments.
 */

export const NO = -1;
export const NEED = -2;

/** How the rest of a confirmed secret is dropped. */
export type Swallow = 'class' | 'line' | 'pem' | 'none';

export interface Match {
  /** Bytes from the start up to `keep` pass through (a token's prefix, a header name). */
  keep: number;
  replacement: Buffer;
  /** End of the confirmed part; `keep..end` is dropped. */
  end: number;
  then: Swallow;
  /** For `then: 'class'`: bytes that still belong to the secret. */
  cls: Uint8Array | null;
  /** What was masked, in words ("an Authorization header value"), for a note next to the masked text. */
  kind: string;
}

export type MatchResult = Match | typeof NO | typeof NEED;

/** Longest window any matcher here needs (the JWT header segment dominates). */
export const MAX_WINDOW = 320;
const JWT_HEADER_MAX = 300;
const PEM_LABEL_MAX = 64;
const HEADER_SPACE_MAX = 8;

function cls(ranges: string): Uint8Array {
  const t = new Uint8Array(256);
  for (let i = 0; i < ranges.length; i++) {
    if (ranges[i + 1] === '~' && i + 2 < ranges.length) {
      for (let c = ranges.charCodeAt(i); c <= ranges.charCodeAt(i + 2); c++) t[c] = 1;
      i += 2;
    } else {
      t[ranges.charCodeAt(i)] = 1;
    }
  }
  return t;
}

// `a~z` is a range; every other character stands for itself.
export const ALNUM = cls('a~zA~Z0~9');
const UPPER_ALNUM = cls('A~Z0~9');
const B64URL = cls('a~zA~Z0~9_-');
const SLACK = cls('a~zA~Z0~9-');
const BEARER = cls('a~zA~Z0~9._+/=-');
const JWT = cls('a~zA~Z0~9_.=-');
const PEM_LABEL = cls('A~Z0~9 ');
/**
 * A credential's bytes in one-line text: printable ASCII but for spaces,
 * quotes, backslashes, brackets, separators and shell metacharacters, so a
 * masked value never runs into `; rm -rf ~`, `&cmd=…` or the next JSON member.
 */
const CREDENTIAL = cls('a~zA~Z0~9!#%*+-./:=?@^_~');
/** A cookie's name: a credential byte but `=`. */
const COOKIE_NAME = cls('a~zA~Z0~9!#%*+-.^_~');
/**
 * A PEM body in one-line text: base64 and the line breaks between its lines,
 * as bytes or escaped (`\n`, `\\n` in JSON inside JSON). No spaces: text
 * hidden inside a body can be no more than space-free base64-looking words.
 */
const PEM_BODY = cls('a~zA~Z0~9+/=\\\n\r');

interface TokenRule {
  prefix: Buffer;
  kind?: string;
  body: Uint8Array;
  /** Body bytes needed to call it a token; fewer is ordinary text. */
  min: number;
}

const TOKEN_RULES: TokenRule[] = [
  ...['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_'].map((p) => ({ prefix: Buffer.from(p), body: ALNUM, min: 20 })),
  { prefix: Buffer.from('github_pat_'), body: cls('a~zA~Z0~9_'), min: 20 },
  { prefix: Buffer.from('glpat-'), body: B64URL, min: 20 },
  // OpenAI and Anthropic (`sk-ant-…`, `sk-proj-…`): the rest of the prefix is body.
  { prefix: Buffer.from('sk-'), body: B64URL, min: 20 },
  ...['sk_live_', 'sk_test_', 'rk_live_', 'rk_test_'].map((p) => ({ prefix: Buffer.from(p), body: ALNUM, min: 16 })),
  ...['xoxb-', 'xoxp-', 'xoxa-', 'xoxr-', 'xoxs-', 'xapp-'].map((p) => ({ prefix: Buffer.from(p), body: SLACK, min: 10 })),
  { prefix: Buffer.from('AKIA'), body: UPPER_ALNUM, min: 16 },
  { prefix: Buffer.from('ASIA'), body: UPPER_ALNUM, min: 16 },
  { prefix: Buffer.from('AIza'), body: B64URL, min: 30 },
  { prefix: Buffer.from('npm_'), body: ALNUM, min: 30 },
  { prefix: Buffer.from('hf_'), body: ALNUM, min: 30 },
  { prefix: Buffer.from('pypi-'), body: B64URL, min: 50 },
];

/** Header-like names whose value (to the end of the line) is masked; matched case-insensitively. */
const HEADER_NAMES = ['authorization', 'cookie', 'api-key', 'auth-token'].map((n) => Buffer.from(n));
const HEADER_KINDS: Record<string, string> = {
  authorization: 'an Authorization header value',
  cookie: 'a Cookie header value',
  'api-key': 'an API key header value',
  'auth-token': 'an auth token header value',
};
/** Authorization schemes: in one-line text the word stays shown and the credential after it is masked. */
const SCHEMES = new Set(['basic', 'bearer', 'digest', 'token', 'negotiate', 'ntlm', 'bot', 'dpop', 'mac', 'hawk']);
const BEARER_WORD = Buffer.from('bearer');
const JWT_START = Buffer.from('eyJ');
const PEM_BEGIN = Buffer.from('-----BEGIN ');
export const PEM_END = Buffer.from('-----END ');
const PEM_DASHES = Buffer.from('-----');
const PRIVATE_KEY = Buffer.from('PRIVATE KEY');

const REDACTED = Buffer.from('[REDACTED]');
const REDACTED_OPEN = Buffer.from('[REDACTED');
const HEADER_REDACTED = Buffer.from(' [REDACTED]');
const JWT_REDACTED = Buffer.from('[REDACTED:JWT]');
const PEM_REDACTED = Buffer.from('[REDACTED:PRIVATE KEY]');

/** Matchers that need a word start, by first byte (both cases for case-insensitive ones). */
type Matcher = (buf: Buffer, i: number, end: number, eof: boolean, oneLine: boolean) => MatchResult;
const WORD_START: Matcher[][] = Array.from({ length: 256 }, () => []);

/**
 * Indexed by (byte << 8 | next byte): 1 if some shape starts with those two
 * bytes. Every shape starts with at least two literal bytes, so this rejects
 * almost every candidate position without calling a matcher.
 */
export const STATIC_PAIRS = new Uint8Array(65536);

/** Register a matcher under the first two bytes of its literal start (both cases if `fold`). */
function register(lit: Buffer, fold: boolean, m: Matcher): void {
  const firsts = fold ? [lit[0]!, upper(lit[0]!)] : [lit[0]!];
  const seconds = fold ? [lit[1]!, upper(lit[1]!)] : [lit[1]!];
  for (const a of new Set(firsts)) {
    WORD_START[a]!.push(m);
    for (const b of seconds) STATIC_PAIRS[(a << 8) | b] = 1;
  }
}

for (const rule of TOKEN_RULES) {
  rule.kind = `a token (${rule.prefix.toString()}…)`;
  register(rule.prefix, false, (b, i, e, eof) => matchToken(rule, b, i, e, eof));
}
for (const name of HEADER_NAMES) register(name, true, (b, i, e, eof, oneLine) => matchHeader(name, b, i, e, eof, oneLine));
register(BEARER_WORD, true, matchBearer);
register(JWT_START, false, matchJwt);
STATIC_PAIRS[(PEM_BEGIN[0]! << 8) | PEM_BEGIN[1]!] = 1;

/** Per byte: 2 if some word-start matcher begins with it. redact.ts adds its own bits. */
export const WORD_START_FLAG = 2;
export const STATIC_FLAGS = new Uint8Array(256).map((_, b) => (WORD_START[b]!.length > 0 ? WORD_START_FLAG : 0));
/** PEM blocks need no word start: `-----BEGIN` often follows `=` or `"`. */
export const PEM_FIRST = 0x2d;

/** Run the word-start matchers for `buf[i]`, first decisive answer wins. */
export function matchWordStart(buf: Buffer, i: number, end: number, eof: boolean, oneLine = false): MatchResult {
  for (const m of WORD_START[buf[i]!]!) {
    const r = m(buf, i, end, eof, oneLine);
    if (r !== NO) return r;
  }
  return NO;
}

/** Compare `lit` at `i`: 1 equal, NO different, NEED if the bytes ran out while equal. */
export function literalAt(buf: Buffer, i: number, end: number, lit: Buffer, fold = false): 1 | typeof NO | typeof NEED {
  for (let k = 0; k < lit.length; k++) {
    if (i + k >= end) return NEED;
    const c = buf[i + k]!;
    if ((fold ? lower(c) : c) !== lit[k]) return NO;
  }
  return 1;
}

function matchToken(rule: TokenRule, buf: Buffer, i: number, end: number, eof: boolean): MatchResult {
  const lit = literalAt(buf, i, end, rule.prefix);
  if (lit !== 1) return lit === NEED && !eof ? NEED : NO;
  const keep = i + rule.prefix.length;
  const stop = keep + rule.min;
  let j = keep;
  while (j < stop && j < end && rule.body[buf[j]!] === 1) j++;
  if (j === stop) return { keep, replacement: REDACTED, end: j, then: 'class', cls: rule.body, kind: rule.kind! };
  return j === end && !eof ? NEED : NO;
}

/** `Authorization: …`, `"cookie": …`, `api-key=…`: everything after the separator to the end of the line. */
function matchHeader(name: Buffer, buf: Buffer, i: number, end: number, eof: boolean, oneLine: boolean): MatchResult {
  const lit = literalAt(buf, i, end, name, true);
  if (lit !== 1) return lit === NEED && !eof ? NEED : NO;
  let j = i + name.length;
  if (j < end && (buf[j] === 0x22 || buf[j] === 0x27)) j++;
  // JSON inside a JSON string: `{\"authorization\": …}`.
  else if (j < end && buf[j] === 0x5c) {
    if (j + 1 >= end) return eof ? NO : NEED;
    if (buf[j + 1] === 0x22) j += 2;
  }
  const spaceStop = j + HEADER_SPACE_MAX;
  while (j < end && j < spaceStop && (buf[j] === 0x20 || buf[j] === 0x09)) j++;
  if (j >= end) return eof ? NO : NEED;
  if (buf[j] !== 0x3a && buf[j] !== 0x3d) return NO;
  // `Authorization: [REDACTED]` was masked already (by mcpguard or the server's
  // own logger): masking it again would drop the rest of the line for nothing.
  let k = j + 1;
  const valueStop = k + HEADER_SPACE_MAX;
  while (k < end && k < valueStop && (buf[k] === 0x20 || buf[k] === 0x09)) k++;
  const masked = k >= end ? NEED : literalAt(buf, k, end, REDACTED_OPEN);
  if (masked === 1) return NO;
  if (masked === NEED && !eof) return NEED;
  const kind = HEADER_KINDS[name.toString()]!;
  if (oneLine) return headerValue(name, buf, j + 1, end, kind);
  return { keep: j + 1, replacement: HEADER_REDACTED, end: j + 1, then: 'line', cls: null, kind };
}

/**
 * One-line text (eof known): a header's value from `at` (just past its `:`
 * or `=`) is one credential, after an opening quote and a scheme word that
 * stay shown; a cookie's is `name=value` pairs joined by `;`. What follows
 * the value is shown, whatever it is.
 */
function headerValue(name: Buffer, buf: Buffer, at: number, end: number, kind: string): MatchResult {
  let j = at;
  while (j < end && (buf[j] === 0x20 || buf[j] === 0x09)) j++;
  if (j < end && (buf[j] === 0x22 || buf[j] === 0x27)) j++;
  else if (j + 1 < end && buf[j] === 0x5c && buf[j + 1] === 0x22) j += 2;
  let word = j;
  while (word < end && ALNUM[buf[word]!] === 1) word++;
  if (word < end && buf[word] === 0x20 && SCHEMES.has(buf.subarray(j, word).toString('latin1').toLowerCase())) {
    for (j = word; j < end && buf[j] === 0x20; j++);
  }
  const keep = j;
  while (j < end && CREDENTIAL[buf[j]!] === 1) j++;
  if (name[0] === 0x63) {
    // Cookie: `a=b; c=d`: a further pair counts only if a name and `=` follow the `;`.
    for (;;) {
      let k = j;
      if (k >= end || buf[k] !== 0x3b) break;
      for (k++; k < end && buf[k] === 0x20; k++);
      const nameAt = k;
      while (k < end && COOKIE_NAME[buf[k]!] === 1) k++;
      if (k === nameAt || k >= end || buf[k] !== 0x3d) break;
      for (j = k + 1; j < end && CREDENTIAL[buf[j]!] === 1; j++);
    }
  }
  if (j === keep) return NO;
  return { keep, replacement: REDACTED, end: j, then: 'none', cls: null, kind };
}

function matchBearer(buf: Buffer, i: number, end: number, eof: boolean): MatchResult {
  const lit = literalAt(buf, i, end, BEARER_WORD, true);
  if (lit !== 1) return lit === NEED && !eof ? NEED : NO;
  let j = i + BEARER_WORD.length;
  const spaceStop = j + HEADER_SPACE_MAX;
  while (j < end && j < spaceStop && buf[j] === 0x20) j++;
  if (j >= end) return eof ? NO : NEED;
  if (j === i + BEARER_WORD.length) return NO;
  const keep = j;
  const stop = keep + 16;
  while (j < stop && j < end && BEARER[buf[j]!] === 1) j++;
  if (j === stop) return { keep, replacement: REDACTED, end: j, then: 'class', cls: BEARER, kind: 'a bearer token' };
  return j === end && !eof ? NEED : NO;
}

/** `eyJ<header>.eyJ`: a JSON Web Token (its header and payload both start with `{"`). */
function matchJwt(buf: Buffer, i: number, end: number, eof: boolean): MatchResult {
  const lit = literalAt(buf, i, end, JWT_START);
  if (lit !== 1) return lit === NEED && !eof ? NEED : NO;
  let j = i + JWT_START.length;
  const stop = j + JWT_HEADER_MAX;
  while (j < end && j < stop && B64URL[buf[j]!] === 1) j++;
  if (j >= end) return eof ? NO : NEED;
  if (buf[j] !== 0x2e) return NO;
  const second = literalAt(buf, j + 1, end, JWT_START);
  if (second !== 1) return second === NEED && !eof ? NEED : NO;
  return { keep: i, replacement: JWT_REDACTED, end: j + 1 + JWT_START.length, then: 'class', cls: JWT, kind: 'a JSON Web Token' };
}

/** `-----BEGIN <label>-----` where the label names a private key. */
export function matchPemBegin(buf: Buffer, i: number, end: number, eof: boolean): MatchResult {
  const lit = literalAt(buf, i, end, PEM_BEGIN);
  if (lit !== 1) return lit === NEED && !eof ? NEED : NO;
  const after = pemLabel(buf, i + PEM_BEGIN.length, end);
  if (after === NEED) return eof ? NO : NEED;
  if (after === NO) return NO;
  return { keep: i, replacement: PEM_REDACTED, end: after, then: 'pem', cls: null, kind: 'a PEM private key' };
}

/**
 * One-line text (eof known): where a PEM block whose BEGIN line ends at
 * `from` ends: past its base64 body and the END line right after it, if
 * there is one. Whatever else follows the body is shown.
 */
export function pemBodyEnd(buf: Buffer, from: number, end: number): number {
  let j = from;
  while (j < end && PEM_BODY[buf[j]!] === 1) j++;
  if (literalAt(buf, j, end, PEM_END) !== 1) return j;
  const after = pemLabel(buf, j + PEM_END.length, end);
  return after >= 0 ? after : j;
}

/**
 * Inside a PEM block: where it ends (the index after `-----END …PRIVATE KEY…-----`),
 * NO if it does not end in `buf[from..end)`, or `-(k + 2)` to hold bytes from `k`
 * because an end marker may be starting there.
 */
export function findPemEnd(buf: Buffer, from: number, end: number, eof: boolean): number {
  let at = from;
  for (;;) {
    const j = buf.indexOf(PEM_END, at);
    if (j === -1 || j >= end) break;
    const after = pemLabel(buf, j + PEM_END.length, end);
    if (after >= 0) return after;
    if (after === NEED && !eof) return -(j + 2);
    at = j + 1;
  }
  if (eof) return NO;
  for (let k = Math.max(at, end - PEM_END.length + 1); k < end; k++) {
    if (literalAt(buf, k, end, PEM_END) === NEED) return -(k + 2);
  }
  return NO;
}

/** `<label>-----` with a private-key label: the index after the dashes. */
function pemLabel(buf: Buffer, at: number, end: number): number {
  let j = at;
  while (j < end && j - at < PEM_LABEL_MAX && PEM_LABEL[buf[j]!] === 1) j++;
  if (j >= end) return NEED;
  const dashes = literalAt(buf, j, end, PEM_DASHES);
  if (dashes === NEED) return NEED;
  if (dashes === NO || !buf.subarray(at, j).includes(PRIVATE_KEY)) return NO;
  return j + PEM_DASHES.length;
}

function lower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 32 : c;
}

function upper(c: number): number {
  return c >= 0x61 && c <= 0x7a ? c - 32 : c;
}
