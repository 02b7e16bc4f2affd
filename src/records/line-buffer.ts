/**
 * LineBuffer: the bytes of record lines not yet written, built in place.
 *
 * A call writes two or three records; building each as a string (a value's JSON text,
 * the joined line, the lines joined for one write) allocated several KB per
 * call and made the young generation fill twice as fast as a plain relay's.
 * Here a line's text goes straight into one reused Buffer, which is hashed
 * and written from there, so a small call's records allocate almost nothing.
 *
 * The bytes are exactly those of the text the string path built and Node's
 * write encoded as UTF-8: canonical() for nested values, JSON.stringify's
 * spelling for strings and numbers (plain ASCII strings are copied byte by
 * byte, anything else goes through JSON.stringify).
 */
import { canonical } from './canonical.js';

/** What a buffer starts at, and shrinks back to after a record that needed more (a long stderr text). */
const INITIAL_BYTES = 16 * 1024;
const KEEP_BYTES = 64 * 1024;
/** Nested plain objects written without canonical()'s copy, down to this depth; deeper goes through canonical(). */
const MAX_DIRECT_DEPTH = 4;

/** 9999-12-31T23:59:59.999Z: the last time toISOString() writes with a four-digit year. */
const LAST_4_DIGIT_MS = 253_402_300_799_999;

/** The last time isoTime() wrote: its ms, its day (UTC) as [dayStart, dayEnd) ms (empty until the first), and its 24 bytes (`2026-11-30T23:54:20.024Z`). */
const ISO = { ms: -1, dayStart: 0, dayEnd: 0, text: new Uint8Array(24) };

/** The date part (`YYYY-MM-DDT`) of the day holding `ms`, from days since 1970-01-01 (the proleptic Gregorian calendar, as Date uses). */
function isoDay(ms: number): void {
  const days = Math.floor(ms / 86_400_000);
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const t = ISO.text;
  digitsInto(t, 0, year, 4);
  t[4] = 0x2d;
  digitsInto(t, 5, month, 2);
  t[7] = 0x2d;
  digitsInto(t, 8, day, 2);
  t[10] = 0x54;
  t[13] = 0x3a;
  t[16] = 0x3a;
  t[19] = 0x2e;
  t[23] = 0x5a;
  ISO.dayStart = days * 86_400_000;
  ISO.dayEnd = ISO.dayStart + 86_400_000;
}

/** The time part (`HH:MM:SS.mmm`) of ISO.text, for `rest` ms into the day. */
function isoTimeOfDay(rest: number): void {
  const t = ISO.text;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  digitsInto(t, 11, hours, 2);
  digitsInto(t, 14, minutes, 2);
  digitsInto(t, 17, seconds, 2);
  digitsInto(t, 20, rest - seconds * 1000, 3);
}

/** `value` as `width` decimal digits (zero-padded) at `at` of a byte array. */
function digitsInto(bytes: Uint8Array, at: number, value: number, width: number): void {
  for (let i = at + width - 1; i >= at; i--) {
    bytes[i] = 0x30 + (value % 10);
    value = Math.floor(value / 10);
  }
}

/** '0'-'9', 'a'-'f' as bytes. */
const HEX_DIGITS = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
const NULL = Buffer.from('null');

/** Views `view` keeps (a power of two). */
const VIEW_SLOTS = 64;

export class LineBuffer {
  bytes: Buffer = Buffer.allocUnsafeSlow(INITIAL_BYTES);
  /** Bytes in use, from 0. */
  length = 0;
  /** Views handed out by `view`, by place and length; emptied whenever `bytes` is replaced. */
  private readonly views: Array<DataView | undefined> = new Array<DataView | undefined>(VIEW_SLOTS).fill(undefined);

  /** Room for `n` more bytes: a larger buffer (contents kept) when needed. */
  reserve(n: number): void {
    const need = this.length + n;
    if (need <= this.bytes.length) return;
    const grown = Buffer.allocUnsafeSlow(Math.max(need, 2 * this.bytes.length));
    this.bytes.copy(grown, 0, 0, this.length);
    this.replace(grown);
  }

  /**
   * A view of bytes [start, end), to hash a line where it was built (crypto
   * takes no offset and length, and a Buffer view per line was most of the
   * records' allocations). A call's lines come back to the same few places
   * with the same few lengths, so a view made for one line is kept by place
   * and length and serves the next line there. Read it at once: its bytes
   * are whatever the buffer holds there later.
   */
  view(start: number, end: number): DataView {
    const length = end - start;
    const slot = (start * 31 + length) & (VIEW_SLOTS - 1);
    const { bytes } = this;
    const kept = this.views[slot];
    if (kept !== undefined && kept.byteOffset === bytes.byteOffset + start && kept.byteLength === length && kept.buffer === bytes.buffer) return kept;
    const made = new DataView(bytes.buffer, bytes.byteOffset + start, length);
    this.views[slot] = made;
    return made;
  }

  /** A new buffer in place of `bytes`: views of the old one would keep it alive, so they go. */
  private replace(bytes: Buffer): void {
    this.bytes = bytes;
    this.views.fill(undefined);
  }

  /**
   * Keep only bytes [from, length), moved to the start (a line written but not
   * hashed yet); a buffer grown past KEEP_BYTES goes back to its first size.
   */
  keepFrom(from: number): void {
    const kept = this.length - from;
    if (this.bytes.length > KEEP_BYTES && kept <= INITIAL_BYTES) {
      const small = Buffer.allocUnsafeSlow(INITIAL_BYTES);
      this.bytes.copy(small, 0, from, this.length);
      this.replace(small);
    } else if (kept > 0 && from > 0) {
      this.bytes.copyWithin(0, from, this.length);
    }
    this.length = kept;
  }

  /** Bytes copied in as they are. */
  raw(part: Uint8Array): void {
    const n = part.length;
    this.reserve(n);
    // `null`, `true`, `false`: a loop beats TypedArray#set's call there; from `,"seq":` on, set is as fast or faster (measured).
    if (n > 8) this.bytes.set(part, this.length);
    else {
      const b = this.bytes;
      const at = this.length;
      for (let i = 0; i < n; i++) b[at + i] = part[i]!;
    }
    this.length += n;
  }

  /** Text as UTF-8. */
  utf8(text: string): void {
    const n = Buffer.byteLength(text, 'utf8');
    this.reserve(n);
    this.length += this.bytes.write(text, this.length, n, 'utf8');
  }

  /** A string as JSON.stringify spells it. */
  jsonString(text: string): void {
    const n = text.length;
    this.reserve(n + 2);
    const bytes = this.bytes;
    const start = this.length;
    let at = start + 1;
    for (let i = 0; i < n; i++) {
      const c = text.charCodeAt(i);
      // Printable ASCII but `"` and `\`: the one byte JSON keeps as it is. Anything else: JSON.stringify's spelling.
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.utf8(JSON.stringify(text));
      bytes[at++] = c;
    }
    bytes[start] = 0x22;
    bytes[at++] = 0x22;
    this.length = at;
  }

  /** A number as JSON.stringify spells it; throws for NaN and the infinities (canonical() does). */
  number(value: number): void {
    if (!Number.isSafeInteger(value)) {
      if (!Number.isFinite(value)) canonical(value); // throws its error
      return this.ascii(JSON.stringify(value));
    }
    let n = value;
    if (n < 0) {
      this.reserve(1);
      this.bytes[this.length++] = 0x2d;
      n = -n;
    }
    let digits = 1;
    for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
    this.reserve(digits);
    const bytes = this.bytes;
    for (let i = this.length + digits - 1; i >= this.length; i--) {
      bytes[i] = 0x30 + (n % 10);
      n = Math.floor(n / 10);
    }
    this.length += digits;
  }

  /**
   * Any record value as canonical() spells it: plain values and plain objects
   * and arrays of them directly, anything else (toJSON, class instances,
   * cycles, deep trees) through canonical(), which also throws what JSON
   * cannot spell.
   */
  value(value: unknown): void {
    if (typeof value === 'string') return this.jsonString(value);
    if (typeof value === 'number') return this.number(value);
    if (typeof value === 'boolean') return this.raw(value ? TRUE : FALSE);
    if (value === null) return this.raw(NULL);
    const start = this.length;
    if (!this.direct(value, 0)) {
      this.length = start;
      this.utf8(canonical(value));
    }
  }

  /**
   * A time in ms as Date.prototype.toISOString() spells it
   * (`2026-11-30T23:54:20.024Z`), in quotes when `quoted`, worked out without
   * a Date or a string. Times outside years 1970-9999 take toISOString().
   */
  isoTime(ms: number, quoted: boolean): void {
    if (!Number.isSafeInteger(ms) || ms < 0 || ms > LAST_4_DIGIT_MS) {
      const text = new Date(ms).toISOString(); // throws a RangeError for an invalid time, as isoAt() does
      return this.ascii(quoted ? `"${text}"` : text);
    }
    // A call's records ask for a few times, mostly the same ms or the same day: the text is kept, not worked out again.
    const iso = ISO;
    if (ms !== iso.ms) {
      if (ms < iso.dayStart || ms >= iso.dayEnd) isoDay(ms);
      isoTimeOfDay(ms - iso.dayStart);
      iso.ms = ms;
    }
    this.reserve(26);
    const b = this.bytes;
    let at = this.length;
    if (quoted) b[at++] = 0x22;
    const text = iso.text;
    for (let i = 0; i < 24; i++) b[at++] = text[i]!;
    if (quoted) b[at++] = 0x22;
    this.length = at;
  }

  /** Hex digits (lower case) of the bytes a latin1 string holds, one character a byte: a digest from `lineDigest`. */
  hexOf(raw: string): void {
    this.reserve(2 * raw.length);
    const b = this.bytes;
    let at = this.length;
    for (let i = 0; i < raw.length; i++) {
      const c = raw.charCodeAt(i);
      b[at++] = HEX_DIGITS[c >> 4]!;
      b[at++] = HEX_DIGITS[c & 15]!;
    }
    this.length = at;
  }

  /** ASCII text, as it is (a hex digest, an ISO time). */
  ascii(text: string): void {
    this.reserve(text.length);
    this.length += this.bytes.write(text, this.length, text.length, 'latin1');
  }

  private byte(b: number): void {
    this.reserve(1);
    this.bytes[this.length++] = b;
  }

  /** A nested value written without copying it; false (bytes left half-written) when canonical() must do it. */
  private direct(value: unknown, depth: number): boolean {
    switch (typeof value) {
      case 'string':
        this.jsonString(value);
        return true;
      case 'number':
        if (!Number.isFinite(value)) return false;
        this.number(value);
        return true;
      case 'boolean':
        this.raw(value ? TRUE : FALSE);
        return true;
      case 'object':
        break;
      default:
        return false;
    }
    if (value === null) {
      this.raw(NULL);
      return true;
    }
    if (depth >= MAX_DIRECT_DEPTH) return false;
    if (Array.isArray(value)) {
      if (Object.getPrototypeOf(value) !== Array.prototype || typeof (value as { toJSON?: unknown }).toJSON === 'function') return false;
      this.byte(0x5b);
      for (let i = 0; i < value.length; i++) {
        if (i > 0) this.byte(0x2c);
        const item: unknown = value[i];
        if (item === undefined) this.raw(NULL);
        else if (!this.direct(item, depth + 1)) return false;
      }
      this.byte(0x5d);
      return true;
    }
    // Only plain objects: a prototype may bring toJSON or getters, which canonical() knows how to treat.
    if (Object.getPrototypeOf(value) !== Object.prototype) return false;
    const object = value as Record<string, unknown>;
    if (typeof object.toJSON === 'function') return false;
    const keys = Object.keys(object).sort();
    this.byte(0x7b);
    let first = true;
    for (const key of keys) {
      const member = object[key];
      if (member === undefined) continue;
      if (!first) this.byte(0x2c);
      first = false;
      this.jsonString(key);
      this.byte(0x3a);
      if (!this.direct(member, depth + 1)) return false;
    }
    this.byte(0x7d);
    return true;
  }
}
