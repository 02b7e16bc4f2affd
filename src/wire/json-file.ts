/**
 * JSON for the files that decide what is allowed (a policy file, a --config
 * file): checked by the scanner the wire uses for frames before JSON.parse
 * builds the value, so a key given twice in any object is refused instead of
 * last-wins (`"decision": "deny"` then `"decision": "allow"` was an allow;
 * another reader of the same file would keep the deny).
 */
import { scanJson } from './json-scan.js';

export type FileJson = { ok: true; value: unknown } | { ok: false; syntax: boolean; reason: string };

/**
 * Parse a file's text. `syntax` failures carry JSON.parse's own message;
 * the others (a duplicate key, nesting deeper than the wire allows) say
 * where, as `line L, column C` (1-based, columns in characters).
 */
export function parseFileJson(text: string): FileJson {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, syntax: true, reason: (error as Error).message };
  }
  // The text as UTF-8 (always valid: it is a decoded string), which is what the scanner reads.
  const bytes = Buffer.from(text, 'utf8');
  const scanned = scanJson(bytes);
  if (!scanned.ok) {
    const why = scanned.reason.startsWith('duplicate key') ? '; a key may appear only once' : '';
    return { ok: false, syntax: false, reason: `${scanned.reason} at ${where(bytes, scanned.offset)}${why}` };
  }
  return { ok: true, value };
}

function where(bytes: Buffer, offset: number): string {
  const lineStart = bytes.lastIndexOf(0x0a, offset - 1) + 1;
  let line = 1;
  for (let i = bytes.indexOf(0x0a); i !== -1 && i < lineStart; i = bytes.indexOf(0x0a, i + 1)) line++;
  return `line ${line}, column ${bytes.subarray(lineStart, offset).toString('utf8').length + 1}`;
}
