/**
 * The rules of retention, as `prune --older-than AGE --max-size SIZE` and the
 * relay's `--retain AGE,SIZE` spell them. Parsing only: the relay's option
 * table checks `--retain` with these before anything starts.
 */

/** What may stay: logs that ended at most `olderThanMs` ago, and at most `maxBytes` of logs in all. */
export interface RetainRules {
  olderThanMs: number | null;
  maxBytes: number | null;
  /** The rules as given (`30d`, `1G`), for messages and tombstones. */
  olderThan: string | null;
  maxSize: string | null;
}

const AGE_UNITS = new Map([
  ['s', 1000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
  ['w', 7 * 86_400_000],
]);
// A Map: the suffix is user input (see base/option-table.ts).
const SIZE_UNITS = new Map([
  ['', 1],
  ['b', 1],
  ['k', 1024],
  ['kb', 1024],
  ['kib', 1024],
  ['m', 1024 ** 2],
  ['mb', 1024 ** 2],
  ['mib', 1024 ** 2],
  ['g', 1024 ** 3],
  ['gb', 1024 ** 3],
  ['gib', 1024 ** 3],
  ['t', 1024 ** 4],
  ['tb', 1024 ** 4],
  ['tib', 1024 ** 4],
]);

/** `30d`, `12h`, `90m`, `3600s`, `2w` in ms; null when it is not one. */
export function parseAge(text: string): number | null {
  const match = /^(\d{1,12})([smhdw])$/.exec(text);
  if (match === null) return null;
  const ms = Number(match[1]) * AGE_UNITS.get(match[2]!)!;
  return Number.isSafeInteger(ms) ? ms : null;
}

/** `1G`, `500M`, `64KiB`, `1048576` in bytes (binary multiples); null when it is not one. */
export function parseSize(text: string): number | null {
  const match = /^(\d{1,15})([a-zA-Z]{0,3})$/.exec(text);
  const unit = match === null ? undefined : SIZE_UNITS.get(match[2]!.toLowerCase());
  if (unit === undefined) return null;
  const bytes = Number(match![1]) * unit;
  return Number.isSafeInteger(bytes) ? bytes : null;
}

export const AGE_EXAMPLE = 'an age such as 30d, 12h, 90m, 3600s or 2w';
export const SIZE_EXAMPLE = 'a size such as 1G, 500M, 64KiB or 1048576';

/** `--retain`'s value: an age, a size, or both joined by a comma (`30d,1G`); an error message when it is none of these. */
export function parseRetain(text: string): RetainRules | string {
  const rules: RetainRules = { olderThanMs: null, maxBytes: null, olderThan: null, maxSize: null };
  const parts = text.split(',');
  if (parts.length > 2 || parts.some((p) => p === '')) return `expects an age, a size, or both as AGE,SIZE (e.g. 30d,1G)`;
  for (const part of parts) {
    const age = parseAge(part);
    const size = age === null ? parseSize(part) : null;
    if (age !== null && rules.olderThanMs === null) Object.assign(rules, { olderThanMs: age, olderThan: part });
    else if (size !== null && rules.maxBytes === null) Object.assign(rules, { maxBytes: size, maxSize: part });
    else if (age === null && size === null) return `'${part}' is neither ${AGE_EXAMPLE} nor ${SIZE_EXAMPLE}`;
    else return `gives ${age !== null ? 'an age' : 'a size'} twice`;
  }
  return rules;
}

/** `1.5 GiB`, `320 KiB`, `12 B`. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[i]}`;
}
