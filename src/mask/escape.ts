/**
 * Untrusted bytes shown on one line: printable text as is, `"` and `\`
 * escaped, control characters as `\n`, `\t`, `\xNN`, and bytes that are not
 * valid UTF-8 as `\xNN`. Pure: masking comes first, in mask.ts.
 */

/** Default number of bytes shown of a quoted line. */
export const SHOWN_BYTES = 120;

/**
 * The first `shown` bytes of `bytes`, double-quoted and escaped; when `more`
 * bytes were left out, `…(+more bytes)` follows the closing quote.
 */
export function escapeQuoted(bytes: Buffer, shown: number, more: number): string {
  shown = Math.min(shown, bytes.length);
  let out = '"';
  let i = 0;
  while (i < shown) {
    const c = bytes[i]!;
    if (c >= 0x20 && c < 0x7f) {
      out += c === 0x22 ? '\\"' : c === 0x5c ? '\\\\' : String.fromCharCode(c);
      i++;
    } else if (c === 0x0a) {
      out += '\\n';
      i++;
    } else if (c === 0x0d) {
      out += '\\r';
      i++;
    } else if (c === 0x09) {
      out += '\\t';
      i++;
    } else if (c < 0x80) {
      out += hex(c);
      i++;
    } else {
      const size = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
      const text = size > 0 && i + size <= shown ? bytes.toString('utf8', i, i + size) : '';
      // Accept only a whole, valid, printable character; C1 controls are escaped.
      if (text.length > 0 && !text.includes('\ufffd') && !/[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(text)) {
        out += text;
        i += size;
      } else {
        out += hex(c);
        i++;
      }
    }
  }
  out += '"';
  if (more > 0) out += `…(+${more} bytes)`;
  return out;
}

function hex(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}

// Characters that draw nothing or reorder what is drawn: zero-width ones, the BOM, the Mongolian vowel separator,
// bidi marks, embeddings, overrides and isolates, the Arabic letter mark, line and paragraph separators.
const INVISIBLE = '\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u2069\\u061c\\ufeff';
const WRITE_OUT = new RegExp(`[\\u0000-\\u001f\\u007f-\\u009f${INVISIBLE}]`, 'g');
const WRITE_OUT_LINES = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${INVISIBLE}]`, 'g');
const WRITE_OUT_JSON = new RegExp(`[\\u007f-\\u009f${INVISIBLE}]`, 'g');

/**
 * Text that came from a server or a client, as a terminal may show it: C0
 * controls, DEL and C1 as `\xNN` (an ESC cannot start a sequence, a CR
 * cannot overwrite the line), the characters above as `\uXXXX` (nothing
 * hidden, nothing reordered). `lines`: newline and tab stay (text shown as
 * lines, e.g. a server's stderr). The one helper every view and diagnostic
 * goes through; masking, when wanted, comes first (mask.ts `shownText`).
 */
export function writeOut(text: string, lines = false): string {
  return text.replace(lines ? WRITE_OUT_LINES : WRITE_OUT, (c) => {
    const code = c.charCodeAt(0);
    return code < 0xa0 ? hex(code) : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** `value` as one line of JSON (--json views) whose text draws what it holds: the characters above as `\uXXXX` escapes (the same value). */
export function jsonLine(value: unknown): string {
  return JSON.stringify(value).replace(WRITE_OUT_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
