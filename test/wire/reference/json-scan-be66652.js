// Reference copy of the scanner as it was before the long-run string path (dist/wire/json-scan.js built
// from src/wire/json-scan.ts at be66652), kept so test/wire/scanner-diff.test.js can check that the fast
// scanner gives the same verdict, reason and offset on every input. Do not edit: it is the oracle.
/**
 * A strict, validating JSON scanner over UTF-8 bytes (RFC 8259 grammar, one
 * value per input). It builds no values: it checks the grammar, rejects
 * duplicate keys in every object (two parsers may keep different copies of a
 * duplicated `id` or `method`: a smuggling vector), and records the byte spans
 * of the members near the top, which is all the JSON-RPC shape check needs.
 * Payloads deep inside `params` or `result` are only walked, never copied.
 *
 * The caller must have checked that the bytes are valid UTF-8 (`isUtf8`):
 * the scanner then only has to look at ASCII structure.
 */
/** Nesting deeper than this is rejected rather than risking the stack. */
export const MAX_DEPTH = 512;
/**
 * How many levels of objects have their members recorded, counted from the
 * message (a batch's items count as messages): the message's own members and
 * those of `params`/`result`/`error`. Deeper objects (tool arguments, results'
 * content) are walked only; a caller that needs one rescans just that node.
 */
const RECORD_OBJECT_LEVELS = 2;
class ScanError {
    reason;
    offset;
    constructor(reason, offset) {
        this.reason = reason;
        this.offset = offset;
    }
}
const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a;
const LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;
/** Scan `buf[start, end)` as exactly one JSON value surrounded by optional whitespace. */
export function scanJson(buf, start = 0, end = buf.length) {
    const scanner = new Scanner(buf, end);
    try {
        let pos = scanner.skipWs(start);
        if (pos >= end)
            return { ok: false, reason: 'empty line, expected a JSON value', offset: pos };
        const value = scanner.value(pos, 0, RECORD_OBJECT_LEVELS);
        pos = scanner.skipWs(value.end);
        if (pos < end)
            return { ok: false, reason: `unexpected ${describe(buf[pos])} after the JSON value`, offset: pos };
        return { ok: true, value };
    }
    catch (error) {
        if (error instanceof ScanError)
            return { ok: false, reason: error.reason, offset: error.offset };
        throw error;
    }
}
function describe(byte) {
    if (byte >= 0x21 && byte < 0x7f)
        return `'${String.fromCharCode(byte)}'`;
    return `byte 0x${byte.toString(16).padStart(2, '0')}`;
}
/** Objects with more keys than this track them in a Set instead of comparing byte ranges. */
const LINEAR_KEY_LIMIT = 16;
class Scanner {
    buf;
    end;
    /**
     * Byte ranges of the keys of the objects being scanned: a stack shared by
     * all nesting levels, `keyTop` entries deep. Entries above `keyTop` are
     * stale and overwritten; the arrays never shrink (cheaper than resizing).
     */
    keyStart = [];
    keyEnd = [];
    keyTop = 0;
    /** Set by `string()`: the string just scanned contained a backslash escape. */
    escaped = false;
    constructor(buf, end) {
        this.buf = buf;
        this.end = end;
    }
    skipWs(pos) {
        const { buf, end } = this;
        while (pos < end) {
            const c = buf[pos];
            if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d)
                break;
            pos++;
        }
        return pos;
    }
    fail(reason, offset) {
        throw new ScanError(reason, offset);
    }
    /**
     * Scan a value and describe it (used near the top, where the shape check
     * looks). `record` is how many more levels of object members to record.
     */
    value(pos, level, record) {
        if (pos >= this.end)
            this.fail('unexpected end of input (truncated JSON)', pos);
        const c = this.buf[pos];
        if (c === LBRACE) {
            const members = record > 0 ? new Map() : undefined;
            return { type: 'object', start: pos, end: this.object(pos, level, members, record - 1), members };
        }
        if (c === LBRACKET) {
            // Only a top-level array (a batch) needs its items, each a message.
            const items = level === 0 ? [] : undefined;
            return { type: 'array', start: pos, end: this.array(pos, level, items, record), items };
        }
        return { type: this.typeAt(pos), start: pos, end: this.skip(pos, level) };
    }
    typeAt(pos) {
        const c = this.buf[pos];
        if (c === QUOTE)
            return 'string';
        if (c === 0x74)
            return 'true';
        if (c === 0x66)
            return 'false';
        if (c === 0x6e)
            return 'null';
        return 'number';
    }
    /** Scan a value without describing it; returns the offset just past it. Allocates nothing. */
    skip(pos, level) {
        if (pos >= this.end)
            this.fail('unexpected end of input (truncated JSON)', pos);
        const c = this.buf[pos];
        if (c === QUOTE)
            return this.string(pos);
        if (c === LBRACE)
            return this.object(pos, level, undefined, 0);
        if (c === LBRACKET)
            return this.array(pos, level, undefined, 0);
        if (c === 0x2d || (c >= 0x30 && c <= 0x39))
            return this.number(pos);
        if (c === 0x74)
            return this.literal(pos, 'true');
        if (c === 0x66)
            return this.literal(pos, 'false');
        if (c === 0x6e)
            return this.literal(pos, 'null');
        return this.fail(`unexpected ${describe(c)} where a JSON value should start`, pos);
    }
    literal(pos, word) {
        const { buf } = this;
        for (let i = 0; i < word.length; i++) {
            if (pos + i >= this.end || buf[pos + i] !== word.charCodeAt(i))
                this.fail(`invalid literal, expected ${word}`, pos);
        }
        return pos + word.length;
    }
    /** Scan an object; records its members into `members` when given. Returns the offset past `}`. */
    object(pos, level, members, record) {
        if (level >= MAX_DEPTH)
            this.fail(`nesting deeper than ${MAX_DEPTH}`, pos);
        const { buf, end, keyStart, keyEnd } = this;
        // This object's keys sit above `base`; every return pops them (a throw abandons the scanner).
        const base = this.keyTop;
        // Keys are compared as raw byte ranges until an escape or a large object makes a Set cheaper.
        let keySet;
        pos = this.skipWs(pos + 1);
        if (pos < end && buf[pos] === RBRACE)
            return pos + 1;
        for (;;) {
            if (pos >= end)
                this.fail('unexpected end of input inside an object (truncated JSON)', pos);
            if (buf[pos] !== QUOTE)
                this.fail(`expected a string key, got ${describe(buf[pos])}`, pos);
            const keyEndPos = this.string(pos);
            if (keySet === undefined && (this.escaped || this.keyTop - base >= LINEAR_KEY_LIMIT)) {
                keySet = new Set();
                for (let k = base; k < this.keyTop; k++)
                    keySet.add(this.keyText(keyStart[k], keyEnd[k]));
            }
            if (keySet !== undefined) {
                const key = this.keyText(pos, keyEndPos);
                if (keySet.has(key))
                    this.fail(`duplicate key ${JSON.stringify(key)}`, pos);
                keySet.add(key);
            }
            else {
                if (this.repeatsKey(base, pos, keyEndPos))
                    this.fail(`duplicate key ${JSON.stringify(this.keyText(pos, keyEndPos))}`, pos);
                keyStart[this.keyTop] = pos;
                keyEnd[this.keyTop] = keyEndPos;
                this.keyTop++;
            }
            const keyAt = pos;
            pos = this.skipWs(keyEndPos);
            if (pos >= end || buf[pos] !== COLON)
                this.fail(pos >= end ? 'unexpected end of input (truncated JSON)' : `expected ':' after a key, got ${describe(buf[pos])}`, pos);
            pos = this.skipWs(pos + 1);
            if (members !== undefined) {
                const value = this.value(pos, level + 1, record);
                members.set(this.keyText(keyAt, keyEndPos), value);
                pos = value.end;
            }
            else {
                pos = this.skip(pos, level + 1);
            }
            pos = this.skipWs(pos);
            if (pos >= end)
                this.fail('unexpected end of input inside an object (truncated JSON)', pos);
            const c = buf[pos];
            if (c === RBRACE) {
                this.keyTop = base;
                return pos + 1;
            }
            if (c !== COMMA)
                this.fail(`expected ',' or '}' in an object, got ${describe(c)}`, pos);
            pos = this.skipWs(pos + 1);
        }
    }
    /** True if the raw key bytes [start, end) equal one of this object's earlier keys. */
    repeatsKey(base, start, end) {
        const { buf, keyStart, keyEnd } = this;
        const length = end - start;
        for (let k = base; k < this.keyTop; k++) {
            const s = keyStart[k];
            if (keyEnd[k] - s !== length)
                continue;
            let i = 1; // skip the opening quote, equal by construction
            while (i < length && buf[s + i] === buf[start + i])
                i++;
            if (i === length)
                return true;
        }
        return false;
    }
    /** Scan an array; records its items into `items` when given. Returns the offset past `]`. */
    array(pos, level, items, record) {
        if (level >= MAX_DEPTH)
            this.fail(`nesting deeper than ${MAX_DEPTH}`, pos);
        const { buf, end } = this;
        pos = this.skipWs(pos + 1);
        if (pos < end && buf[pos] === RBRACKET)
            return pos + 1;
        for (;;) {
            if (items !== undefined) {
                const value = this.value(pos, level + 1, record);
                items.push(value);
                pos = value.end;
            }
            else {
                pos = this.skip(pos, level + 1);
            }
            pos = this.skipWs(pos);
            if (pos >= end)
                this.fail('unexpected end of input inside an array (truncated JSON)', pos);
            const c = buf[pos];
            if (c === RBRACKET)
                return pos + 1;
            if (c !== COMMA)
                this.fail(`expected ',' or ']' in an array, got ${describe(c)}`, pos);
            pos = this.skipWs(pos + 1);
        }
    }
    /** Returns the offset just past the closing quote; sets `escaped`. */
    string(pos) {
        const { buf, end } = this;
        let i = pos + 1;
        this.escaped = false;
        for (;;) {
            // Hot loop: most bytes are plain text.
            while (i < end) {
                const c = buf[i];
                if (c === QUOTE || c === BACKSLASH || c < 0x20)
                    break;
                i++;
            }
            if (i >= end)
                this.fail('unterminated string (truncated JSON)', pos);
            const c = buf[i];
            if (c === QUOTE)
                return i + 1;
            if (c < 0x20)
                this.fail(`raw control character 0x${c.toString(16).padStart(2, '0')} inside a string`, i);
            this.escaped = true;
            const e = i + 1 < end ? buf[i + 1] : -1;
            if (e === 0x75) {
                const unit = this.hex4(i);
                // I-JSON (RFC 7493): no lone surrogates; parsers disagree on them (kept, replaced, refused).
                if (unit >= 0xdc00 && unit <= 0xdfff)
                    this.fail('lone low surrogate escape in a string', i);
                if (unit >= 0xd800 && unit <= 0xdbff) {
                    const low = buf[i + 6] === BACKSLASH && buf[i + 7] === 0x75 ? this.hex4(i + 6) : -1;
                    if (low < 0xdc00 || low > 0xdfff)
                        this.fail('lone high surrogate escape in a string', i);
                    i += 6;
                }
                i += 6;
            }
            else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
                i += 2;
            }
            else {
                this.fail('invalid escape in a string', i);
            }
        }
    }
    /** The code unit of the `\\uXXXX` escape at `i`. */
    hex4(i) {
        let unit = 0;
        for (let k = 2; k < 6; k++) {
            const h = i + k < this.end ? this.buf[i + k] : -1;
            const digit = h >= 0x30 && h <= 0x39 ? h - 0x30 : h >= 0x41 && h <= 0x46 ? h - 0x37 : h >= 0x61 && h <= 0x66 ? h - 0x57 : -1;
            if (digit < 0)
                this.fail('invalid \\u escape in a string', i);
            unit = unit * 16 + digit;
        }
        return unit;
    }
    number(pos) {
        const { buf, end } = this;
        let i = pos;
        if (buf[i] === 0x2d)
            i++;
        if (i >= end)
            this.fail('invalid number', pos);
        if (buf[i] === 0x30)
            i++;
        else if (buf[i] >= 0x31 && buf[i] <= 0x39)
            while (i < end && buf[i] >= 0x30 && buf[i] <= 0x39)
                i++;
        else
            this.fail('invalid number', pos);
        if (i < end && buf[i] === 0x2e) {
            const digits = ++i;
            while (i < end && buf[i] >= 0x30 && buf[i] <= 0x39)
                i++;
            if (i === digits)
                this.fail('invalid number: no digits after the decimal point', pos);
        }
        if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
            i++;
            if (i < end && (buf[i] === 0x2b || buf[i] === 0x2d))
                i++;
            const digits = i;
            while (i < end && buf[i] >= 0x30 && buf[i] <= 0x39)
                i++;
            if (i === digits)
                this.fail('invalid number: no digits in the exponent', pos);
        }
        return i;
    }
    /** The decoded text of a key; escapes are resolved so "a" and "\u0061" collide. */
    keyText(start, end) {
        return decodeString(this.buf, start, end);
    }
}
/** Decode a scanned string node. */
export function stringValue(buf, node) {
    return decodeString(buf, node.start, node.end);
}
/** The text of the JSON string literal at [start, end) (quotes included). */
function decodeString(buf, start, end) {
    const common = commonString(buf, start + 1, end - 1);
    if (common !== undefined)
        return common;
    const raw = buf.toString('utf8', start + 1, end - 1);
    return raw.includes('\\') ? JSON.parse(buf.toString('utf8', start, end)) : raw;
}
/**
 * Strings every message carries (JSON-RPC and MCP member names, the version,
 * common methods). Recognised by their bytes, they are returned as these
 * constants instead of being decoded into a new string each time.
 */
const COMMON_STRINGS = [
    'jsonrpc', '2.0', 'id', 'method', 'params', 'result', 'error', 'code', 'message', 'data', '_meta',
    'name', 'arguments', 'content', 'isError', 'structuredContent', 'requestId', 'reason',
    'progressToken', 'progress', 'total', 'cursor', 'nextCursor', 'uri',
    'protocolVersion', 'capabilities', 'clientInfo', 'serverInfo',
    'initialize', 'ping', 'tools/call', 'tools/list', 'resources/read', 'resources/list', 'prompts/get', 'prompts/list',
    'notifications/initialized', 'notifications/cancelled', 'notifications/progress',
];
/** COMMON_STRINGS by byte length: each as its text and its char codes (all ASCII). */
const COMMON_BY_LENGTH = [];
for (const text of COMMON_STRINGS) {
    (COMMON_BY_LENGTH[text.length] ??= []).push({ text, codes: Array.from(text, (c) => c.charCodeAt(0)) });
}
/** The common string whose raw bytes are exactly buf[start, end), if any (no escapes: none has a backslash). */
function commonString(buf, start, end) {
    const candidates = COMMON_BY_LENGTH[end - start];
    if (candidates === undefined)
        return undefined;
    for (let c = 0; c < candidates.length; c++) {
        const { text, codes } = candidates[c];
        let i = 0;
        while (i < codes.length && buf[start + i] === codes[i])
            i++;
        if (i === codes.length)
            return text;
    }
    return undefined;
}
/** The source text of a scanned node. */
export function nodeText(buf, node) {
    return buf.toString('utf8', node.start, node.end);
}
