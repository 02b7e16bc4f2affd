/**
 * One masking path for everything mcpguard itself writes or keeps that quotes
 * bytes from either side: rejected client frames and child stdout noise in
 * diagnostics, reasons and details that embed ids or member names, the
 * session summary, the records (the command line included), and the reports
 * of `mcpguard check`. It is the child-stderr masker (stderr/redact.ts), with
 * the same env secrets and the same shapes, run once over a whole string or
 * buffer, so the two cannot drift apart. The child's stderr itself stays
 * streaming, in stderr/tap.ts.
 *
 * Only what is quoted or kept is masked: frames that are forwarded are never
 * touched, and a string with no byte where a secret could start (the usual
 * method name or reason) is answered without encoding it.
 */
import { escapeQuoted, SHOWN_BYTES, writeOut } from './escape.js';
import { MAX_HOLD_BYTES, Redactor } from './redact.js';

export class Masker {
  readonly #redactor: Redactor;

  constructor(env: Record<string, string | undefined>) {
    this.#redactor = new Redactor({ env });
  }

  /** Secrets masked so far. */
  get count(): number {
    return this.#redactor.count;
  }

  /** `input` with its secrets masked; `input` itself when there were none. */
  bytes(input: Buffer): Buffer {
    const r = this.#redactor;
    r.reset();
    const before = r.count;
    const head = r.push(input);
    const tail = r.flush();
    if (r.count === before) return input;
    return tail.length === 0 ? head : Buffer.concat([head, tail]);
  }

  /** `input` with its secrets masked; `input` itself when there were none. */
  text(input: string): string {
    if (!this.#redactor.mayMatch(input)) return input;
    const bytes = Buffer.from(input, 'utf8');
    const out = this.bytes(bytes);
    return out === bytes ? input : out.toString('utf8');
  }

  /**
   * `input`, a single line (the JSON text of a tool call's arguments),
   * masked so that each masked stretch ends where its secret ends
   * (Redactor.oneLine), with what each masked stretch was, in words.
   */
  oneLine(input: string): { text: string; masked: string[] } {
    if (!this.#redactor.mayMatch(input)) return { text: input, masked: [] };
    const bytes = Buffer.from(input, 'utf8');
    const out = this.#redactor.oneLine(bytes);
    return { text: out.bytes === bytes ? input : out.bytes.toString('utf8'), masked: out.kinds };
  }

  /**
   * The first `max` bytes of `bytes`, masked, then quoted and escaped
   * (escape.ts). Masking comes first, over enough bytes past `max` to decide
   * every secret that starts before it: a secret cut in half could pass for
   * ordinary text. `…(+N bytes)` counts what is not shown.
   */
  quote(bytes: Buffer, max: number = SHOWN_BYTES): string {
    const window = max + MAX_HOLD_BYTES;
    if (bytes.length <= window) {
      const masked = this.bytes(bytes);
      return escapeQuoted(masked, max, Math.max(0, masked.length - max));
    }
    const r = this.#redactor;
    r.reset();
    const decided = r.push(bytes.subarray(0, window));
    const shown = Math.min(max, decided.length);
    return escapeQuoted(decided, shown, decided.length - shown + bytes.length - (window - r.pending));
  }

  /**
   * The first `max` bytes of `bytes`, masked, as plain text (for a telemetry
   * attribute: neither quoted nor escaped), cut at a character boundary.
   * Masked as `quote` masks, over `max` + MAX_HOLD_BYTES, so a secret that
   * starts before the cut is masked whole. `omitted`: bytes not shown, of
   * the masked whole (`total`: the input's whole length, when `bytes` is only its head).
   */
  clip(bytes: Buffer, max: number, total: number = bytes.length): { text: string; omitted: number } {
    const window = max + MAX_HOLD_BYTES;
    let decided: Buffer;
    let whole: number;
    if (bytes.length <= window && total <= bytes.length) {
      decided = this.bytes(bytes);
      whole = decided.length;
    } else {
      const r = this.#redactor;
      r.reset();
      decided = r.push(bytes.subarray(0, window));
      whole = decided.length + total - (Math.min(window, bytes.length) - r.pending);
    }
    let end = Math.min(max, decided.length);
    // Not inside a UTF-8 sequence: back up over continuation bytes.
    while (end > 0 && end < decided.length && (decided[end]! & 0xc0) === 0x80) end--;
    return { text: decided.toString('utf8', 0, end), omitted: Math.max(0, whole - end) };
  }

  /**
   * A copy of a JSON-like value (a record, a summary, a report) with every
   * string masked, keys included. Each string is masked on its own, so the
   * JSON around it stays whole.
   */
  value<T>(v: T): T {
    if (typeof v === 'string') return this.text(v) as T;
    if (Array.isArray(v)) return v.map((item) => this.value(item)) as T;
    if (v !== null && typeof v === 'object' && isPlain(v)) {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(v)) {
        const k = this.text(key);
        // A member named "__proto__" (JSON.parse makes it an own one) stays a member, not the copy's prototype.
        if (k === '__proto__') Object.defineProperty(out, k, { value: this.value(item), enumerable: true, writable: true, configurable: true });
        else out[k] = this.value(item);
      }
      return out as T;
    }
    return v;
  }
}

function isPlain(v: object): boolean {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

let shared: Masker | null = null;

/**
 * The masker for mcpguard's own process: the child inherits this
 * environment, so its secrets are the ones to look for. Built on first use.
 */
export function processMasker(): Masker {
  return (shared ??= new Masker(process.env));
}

/**
 * Text from either side (or a command line) on its way to a terminal: secrets
 * masked, then every character that could drive the terminal or hide text
 * written out (escape.ts `writeOut`).
 */
export function shownText(text: string): string {
  return writeOut(processMasker().text(text));
}
