/**
 * Times for people, both ways: `--since`/`--until` values read as
 * `journalctl --since` and `git log --since` read them, and record times
 * (ISO UTC) shown in local time with the zone, or in UTC with `--utc`.
 */
import { GuardError } from '../base/errors.js';

const UNITS = new Map([
  ['s', 1000],
  ['m', 60_000],
  ['h', 3_600_000],
  ['d', 86_400_000],
  ['w', 7 * 86_400_000],
]);
const FORMS = 'e.g. 2026-11-30, 2026-11-30 14:05, 2026-11-30T14:05:00Z, 2h, 30m, 7d, today, yesterday';

/**
 * Milliseconds since the epoch for a `--since`/`--until` value:
 * - `2h`, `30m`, `90s`, `7d`, `2w` (that long ago; `2h ago` too), `now`;
 * - `today`, `yesterday` (midnight);
 * - an ISO date `2026-11-30` (midnight) or date-time `2026-11-30 14:05[:07[.123]]`
 *   (`T` or a space), in local time (UTC with `utc`) unless it ends in `Z` or `±HH:MM`.
 * Anything else is a GuardError naming the option and the value.
 */
export function parseWhen(text: string, option: string, utc = false, now = Date.now()): number {
  const bad = (why = ''): GuardError => new GuardError('bad_option', `${option} expects a time (${FORMS}), got '${text}'${why}`);
  const t = text.trim().toLowerCase();
  if (t === 'now') return now;
  if (t === 'today' || t === 'yesterday') {
    const day = dayStart(now, utc);
    return t === 'today' ? day : dayStart(day - 12 * 3_600_000, utc); // noon before: safe across a DST change
  }
  const relative = /^(\d{1,9})\s*([smhdw])(?:\s+ago)?$/.exec(t);
  if (relative !== null) return now - Number(relative[1]) * UNITS.get(relative[2]!)!;
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?)?\s*(z|[+-]\d{2}:?\d{2})?$/.exec(t);
  if (iso === null) throw bad();
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac, zone] = iso;
  const parts = [Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s), frac === undefined ? 0 : Math.floor(Number(frac) * 1000)] as const;
  if (parts[1] > 11 || parts[3] > 23 || parts[4] > 59 || parts[5] > 59) throw bad(': no such date or time');
  let ms: number;
  let check: Date;
  if (zone !== undefined || utc) {
    ms = Date.UTC(...parts);
    check = new Date(ms);
    if (check.getUTCDate() !== parts[2] || check.getUTCMonth() !== parts[1]) throw bad(': no such date');
    if (zone !== undefined && zone !== 'z') {
      const z = /^([+-])(\d{2}):?(\d{2})$/.exec(zone)!;
      ms -= (z[1] === '-' ? -1 : 1) * (Number(z[2]) * 60 + Number(z[3])) * 60_000;
    }
  } else {
    check = new Date(...parts);
    ms = check.getTime();
    if (check.getDate() !== parts[2] || check.getMonth() !== parts[1]) throw bad(': no such date');
  }
  return ms;
}

function dayStart(ms: number, utc: boolean): number {
  const d = new Date(ms);
  return utc ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) : new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime();
}

const two = (n: number): string => String(n).padStart(2, '0');

/** `+01:00`, `-05:00`: a UTC offset in minutes east. */
export function offsetText(minutes: number): string {
  const a = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${two(Math.floor(a / 60))}:${two(a % 60)}`;
}

/**
 * How record times are shown: in local time (the TZ environment variable
 * decides, as for every program) or in UTC. A table names the zone once, in
 * its header (`START -05:00`); a time whose offset differs from that one (the
 * other side of a DST change) carries its own.
 */
export class Clock {
  /** The zone as tables name it: `UTC`, or the local offset now. */
  readonly zone: string;
  private readonly offset: number;

  constructor(
    readonly utc: boolean,
    now = Date.now(),
  ) {
    this.offset = utc ? 0 : -new Date(now).getTimezoneOffset();
    this.zone = utc ? 'UTC' : offsetText(this.offset);
  }

  /** `2026-11-30 18:47:07` (and ` -04:00` if its offset is not the table's); `-` when unknown. */
  date(iso: string | null): string {
    const p = this.parts(iso);
    return p === null ? '-' : `${p.date} ${p.time}${p.offset === this.offset ? '' : ` ${offsetText(p.offset)}`}`;
  }

  /** `2026-11-30 18:47:07 -05:00` or `2026-11-30 23:47:07 UTC`: the zone always shown; `-` when unknown. */
  full(iso: string | null): string {
    const p = this.parts(iso);
    return p === null ? '-' : `${p.date} ${p.time} ${this.utc ? 'UTC' : offsetText(p.offset)}`;
  }

  /** `2026-11-30 18:47:07.123 -05:00`: `full` to the millisecond, as one record's times are compared; `-` when unknown. */
  fullMs(iso: string | null): string {
    const p = this.parts(iso);
    return p === null ? '-' : `${p.date} ${p.time}.${String(p.ms).padStart(3, '0')} ${this.utc ? 'UTC' : offsetText(p.offset)}`;
  }

  /** `18:47:07.123` (and the offset if it is not the table's); `-` when unknown. */
  clock(iso: string | null): string {
    const p = this.parts(iso);
    return p === null ? '-' : `${p.time}.${String(p.ms).padStart(3, '0')}${p.offset === this.offset ? '' : ` ${offsetText(p.offset)}`}`;
  }

  private parts(iso: string | null): { date: string; time: string; ms: number; offset: number } | null {
    if (iso === null) return null;
    const ms = Date.parse(iso);
    if (!Number.isFinite(ms)) return null;
    const d = new Date(ms);
    const offset = this.utc ? 0 : -d.getTimezoneOffset();
    const l = new Date(ms + offset * 60_000); // its UTC fields are the wall-clock fields
    return {
      date: `${l.getUTCFullYear()}-${two(l.getUTCMonth() + 1)}-${two(l.getUTCDate())}`,
      time: `${two(l.getUTCHours())}:${two(l.getUTCMinutes())}:${two(l.getUTCSeconds())}`,
      ms: l.getUTCMilliseconds(),
      offset,
    };
  }
}
