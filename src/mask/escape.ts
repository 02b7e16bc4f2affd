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
    } else if (c === 0x0a) { out += '\\n'; i++; }
    else if (c === 0x0d) { out += '\\r'; i++; }
    else if (c === 0x09) { out += '\\t'; i++; }
    else if (c < 0x80) { out += hex(c); i++; }
    else {
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
