/**
 * The servers of Codex's config.toml, located by a small scanner that knows
 * TOML's syntax (tables, dotted and quoted keys, the four string forms,
 * arrays, inline tables, comments) well enough to give the exact span of
 * every value, without building a document: install edits only the bytes of
 * `command` and the front of `args`, so comments, number forms (1_000,
 * 0x10, 1e3) and everything else stay as written. Anything it cannot read
 * refuses the file whole. Why not a TOML package: the parsers on npm give
 * values, not source spans, and one that re-serialises is exactly what loses
 * comments and turns integers into floats.
 */
import { GuardError } from '../base/errors.js';
import type { Entry, Item, Span } from './wrap.js';

type Value = Item & { kind: 'string' | 'array' | 'table' | 'other'; items?: Value[]; members?: Member[] };
interface Member {
  path: string[];
  keyStart: number;
  lastKeyStart: number;
  keyEnd: number;
  value: Value;
  inline: boolean;
}

class Scanner {
  i = 0;
  constructor(readonly text: string) {}

  fail(why: string): never {
    const before = this.text.slice(0, this.i).split('\n');
    throw new GuardError('install_parse', `cannot parse it: ${why} at line ${before.length}, column ${before[before.length - 1]!.length + 1}`, 1);
  }
  peek(n = 0): string {
    return this.text[this.i + n] ?? '';
  }
  at(s: string): boolean {
    return this.text.startsWith(s, this.i);
  }
  /** Spaces and tabs; with `lines`, newlines and comments too. */
  skip(lines: boolean): void {
    for (;;) {
      const c = this.peek();
      if (c === ' ' || c === '\t' || (lines && (c === '\n' || c === '\r'))) this.i++;
      else if (c === '#' && lines) while (this.i < this.text.length && this.peek() !== '\n') this.i++;
      else return;
    }
  }
  /** A comment, then the end of the line (or of the file). */
  endLine(): void {
    this.skip(false);
    if (this.peek() === '#') while (this.i < this.text.length && this.peek() !== '\n') this.i++;
    if (this.at('\r\n')) this.i += 2;
    else if (this.peek() === '\n') this.i++;
    else if (this.i < this.text.length) this.fail('expected the end of the line');
  }
  key(): { path: string[]; lastStart: number; lastEnd: number } {
    const path: string[] = [];
    let lastStart = this.i;
    let lastEnd = this.i;
    for (;;) {
      this.skip(false);
      lastStart = this.i;
      const c = this.peek();
      if (c === '"' || c === "'") path.push(this.string().value as string);
      else {
        const m = /^[A-Za-z0-9_-]+/.exec(this.text.slice(this.i, this.i + 256));
        if (m === null) this.fail('expected a key');
        path.push(m[0]);
        this.i += m[0].length;
      }
      lastEnd = this.i;
      this.skip(false);
      if (this.peek() !== '.') return { path, lastStart, lastEnd };
      this.i++;
    }
  }
  string(): Value {
    const start = this.i;
    const quote = this.peek();
    const multi = this.at(quote.repeat(3));
    this.i += multi ? 3 : 1;
    let out = '';
    if (multi && this.at('\r\n')) this.i += 2;
    else if (multi && this.peek() === '\n') this.i++;
    for (;;) {
      if (this.i >= this.text.length) this.fail('unterminated string');
      const c = this.peek();
      if (!multi && c === quote) {
        this.i++;
        return { kind: 'string', start, end: this.i, value: out };
      }
      if (multi && this.at(quote.repeat(3))) {
        // Up to two quotes may end the content right before the closing three.
        const run = this.at(quote.repeat(5)) ? 5 : this.at(quote.repeat(4)) ? 4 : 3;
        out += quote.repeat(run - 3);
        this.i += run;
        return { kind: 'string', start, end: this.i, value: out };
      }
      if (!multi && c === '\n') this.fail('newline in a string');
      if (c === '\\' && quote === '"') out += this.escape(multi);
      else {
        out += c;
        this.i++;
      }
    }
  }
  escape(multi: boolean): string {
    const c = this.peek(1);
    this.i += 2;
    const simple: Record<string, string> = { b: '\b', t: '\t', n: '\n', f: '\f', r: '\r', e: '\x1b', '"': '"', '\\': '\\' };
    if (Object.hasOwn(simple, c)) return simple[c]!;
    const size = c === 'u' ? 4 : c === 'U' ? 8 : c === 'x' ? 2 : 0;
    if (size > 0) {
      const hex = this.text.slice(this.i, this.i + size);
      if (!/^[0-9A-Fa-f]+$/.test(hex) || hex.length !== size) this.fail('bad escape');
      this.i += size;
      return String.fromCodePoint(parseInt(hex, 16));
    }
    if (multi && /[ \t\r\n]/.test(c)) {
      this.i--;
      this.skip(true);
      return '';
    }
    this.i -= 2;
    return this.fail('bad escape');
  }
  value(): Value {
    const c = this.peek();
    const start = this.i;
    if (c === '"' || c === "'") return this.string();
    if (c === '[') {
      this.i++;
      const items: Value[] = [];
      for (;;) {
        this.skip(true);
        if (this.peek() === ']') break;
        items.push(this.value());
        this.skip(true);
        if (this.peek() === ',') this.i++;
        else if (this.peek() !== ']') this.fail("expected ',' or ']'");
      }
      this.i++;
      return { kind: 'array', start, end: this.i, value: null, items };
    }
    if (c === '{') {
      this.i++;
      const members: Member[] = [];
      for (;;) {
        this.skip(true);
        if (this.peek() === '}') break;
        members.push(this.member(true));
        this.skip(true);
        if (this.peek() === ',') this.i++;
        else if (this.peek() !== '}') this.fail("expected ',' or '}'");
      }
      this.i++;
      return { kind: 'table', start, end: this.i, value: null, members };
    }
    const m = /^[^\s,\]}#]+(?: [0-9][^\s,\]}#]*)?/.exec(this.text.slice(this.i, this.i + 256));
    if (m === null) this.fail('expected a value');
    this.i += m[0].length;
    return { kind: 'other', start, end: this.i, value: m[0] };
  }
  member(inline: boolean): Member {
    const keyStart = this.i;
    const { path, lastStart, lastEnd: keyEnd } = this.key();
    if (this.peek() !== '=') this.fail("expected '='");
    this.i++;
    this.skip(false);
    return { path, keyStart, lastKeyStart: lastStart, keyEnd, value: this.value(), inline };
  }
}

/** Every member of the document under its full key path (inline tables' members too). */
function flatten(text: string): Map<string, Member> {
  const s = new Scanner(text);
  const flat = new Map<string, Member>();
  let table: string[] = [];
  const put = (prefix: string[], m: Member): void => {
    const path = [...prefix, ...m.path];
    // TOML 1.0 forbids a key defined twice (Codex refuses such a file); the scanner would keep the last one silently.
    if (path[0] === 'mcp_servers' && flat.has(JSON.stringify(path))) {
      s.i = m.keyStart;
      s.fail(`the key ${JSON.stringify(path.join('.'))} is defined twice`);
    }
    flat.set(JSON.stringify(path), { ...m, path });
    for (const inner of m.value.kind === 'table' ? (m.value.members ?? []) : []) put(path, inner);
  };
  for (;;) {
    s.skip(true);
    if (s.i >= text.length) return flat;
    if (s.peek() === '[') {
      const double = s.at('[[');
      s.i += double ? 2 : 1;
      table = s.key().path;
      if (!s.at(double ? ']]' : ']')) s.fail("expected ']'");
      s.i += double ? 2 : 1;
      // An array of tables is never a server; its members go nowhere that install looks.
      if (double) table = ['[[', ...table];
    } else {
      put(table, s.member(false));
    }
    s.endLine();
  }
}

/** Every `[mcp_servers.<name>]` server (or `mcp_servers.<name> = { ... }`) of a config.toml. */
export function tomlEntries(text: string): Entry[] {
  const flat = flatten(text);
  const names: string[] = [];
  for (const key of flat.keys()) {
    const path = JSON.parse(key) as string[];
    if (path.length >= 3 && path[0] === 'mcp_servers' && !names.includes(path[1]!)) names.push(path[1]!);
  }
  const nl = text.includes('\r\n') ? '\r\n' : '\n';
  return names.map((name) => {
    const get = (...rest: string[]): Member | undefined => flat.get(JSON.stringify(['mcp_servers', name, ...rest]));
    const env: Record<string, string> = {};
    for (const [key, m] of flat) {
      const path = JSON.parse(key) as string[];
      if (path.length === 4 && path[0] === 'mcp_servers' && path[1] === name && path[2] === 'env' && typeof m.value.value === 'string')
        env[path[3]!] = m.value.value;
    }
    const cmd = get('command');
    const argsMember = get('args');
    const base = {
      name,
      scope: null,
      env,
      addArgs: () => {
        throw new Error('no command');
      },
      addedArgs: (): Span | null => null,
    };
    if (cmd === undefined)
      return { ...base, remote: get('url') !== undefined ? 'a remote server (url)' : 'no command (not a stdio server)', command: null, args: null };
    const a = argsMember?.value;
    const args =
      a === undefined
        ? null
        : a.kind === 'array'
          ? {
              open: a.start + 1,
              close: a.end - 1,
              items: (a.items ?? []).map((v) => ({ start: v.start, end: v.end, value: v.kind === 'string' ? v.value : null })),
            }
          : { open: a.start, close: a.start, items: [{ start: a.start, end: a.end, value: null }] };
    // `args` is written the way `command` is: the same key prefix, the same ' = ', the same line start or ', '.
    const argsKey = text.slice(cmd.keyStart, cmd.lastKeyStart) + 'args' + text.slice(cmd.keyEnd, cmd.value.start);
    const lead = (at: number): string => /[ \t]*$/.exec(text.slice(text.lastIndexOf('\n', at - 1) + 1, at))![0];
    const added = (arrayText: string, at: number): string => `${argsKey}${arrayText}${cmd.inline ? ', ' : nl + lead(at)}`;
    return {
      ...base,
      remote: null,
      command: { start: cmd.value.start, end: cmd.value.end, value: cmd.value.kind === 'string' ? cmd.value.value : null },
      args,
      addArgs: (arrayText: string) => ({ offset: cmd.keyStart, length: 0, content: added(arrayText, cmd.keyStart) }),
      addedArgs: () => {
        if (argsMember === undefined || argsMember.keyStart > cmd.keyStart) return null;
        const expected = added(text.slice(argsMember.value.start, argsMember.value.end), argsMember.keyStart);
        return text.slice(argsMember.keyStart, cmd.keyStart) === expected ? { start: argsMember.keyStart, end: cmd.keyStart } : null;
      },
    };
  });
}
