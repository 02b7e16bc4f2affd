/**
 * Small helpers on values and text that every layer uses: one copy each.
 */

/** A plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `text` cut to at most `max` characters, the last of them `…` when it was cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * `text` cut to at most `max` characters in its middle (`python3 /srv/…/server.py`):
 * its start and, longer, its end stay; `headShare` of the kept characters come from the start.
 */
export function clipMiddle(text: string, max: number, headShare = 0.4): string {
  if (text.length <= max) return text;
  if (max < 5) return clip(text, max);
  const head = Math.floor((max - 1) * headShare);
  return `${text.slice(0, head)}…${text.slice(text.length - (max - 1 - head))}`;
}
