/**
 * Hidden characters made visible. A tool's name, title and descriptions, the
 * server's `instructions`, and (with --sanitize-results) the text of results
 * go to a model that reads every code point, and to a person who sees only
 * what a terminal or a chat window draws. These are the characters that make
 * the two differ: C0 and C1 controls other than newline and tab (ESC starts
 * ANSI/OSC sequences that hide or recolour text), zero-width characters, and
 * bidirectional controls that reorder what is drawn. Each is replaced by its
 * escape written out (`\u202e`), so both readers see the same thing; the
 * rest of an escape sequence (`[8m`) is ordinary text and stays.
 */

/** What was rewritten, by kind. */
export interface HiddenCounts {
  /** C0/C1 controls and DEL (an ESC among them counts here and under `escapes`). */
  controls: number;
  /** ESC followed by `[` (CSI) or `]` (OSC): terminal escape sequences. */
  escapes: number;
  zero_width: number;
  bidi: number;
}

export function noCounts(): HiddenCounts {
  return { controls: 0, escapes: 0, zero_width: 0, bidi: 0 };
}

export function addCounts(into: HiddenCounts, more: HiddenCounts): void {
  into.controls += more.controls;
  into.escapes += more.escapes;
  into.zero_width += more.zero_width;
  into.bidi += more.bidi;
}

export function totalOf(counts: HiddenCounts): number {
  return counts.controls + counts.zero_width + counts.bidi;
}

// C0 but \t and \n, DEL and C1; zero-width space/joiners, word joiner, invisible operators, the BOM, Mongolian vowel separator;
// bidi marks, embeddings, overrides and isolates, the Arabic letter mark, line and paragraph separators.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u180e\u200b-\u200d\u2060-\u2064\ufeff\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c\u2028\u2029]/g;
const ZERO_WIDTH = /[\u180e\u200b-\u200d\u2060-\u2064\ufeff]/;
const BIDI = /[\u200e\u200f\u202a-\u202e\u2066-\u2069\u061c]/;

/** `text` with every hidden character written out as `\uXXXX`, and what was found; `text` itself when nothing was. */
export function reveal(text: string): { text: string; counts: HiddenCounts | null } {
  HIDDEN.lastIndex = 0;
  if (!HIDDEN.test(text)) return { text, counts: null };
  const counts = noCounts();
  const out = text.replace(HIDDEN, (c, at: number) => {
    if (ZERO_WIDTH.test(c)) counts.zero_width++;
    else if (BIDI.test(c)) counts.bidi++;
    else {
      counts.controls++;
      if (c === '\u001b' && (text[at + 1] === '[' || text[at + 1] === ']')) counts.escapes++;
    }
    return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  });
  return { text: out, counts };
}
