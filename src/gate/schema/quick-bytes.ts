/**
 * The quick yes of quick-check.ts, on a call's arguments as bytes. A large
 * argument is mostly one long string (a file, a document), and a schema
 * mostly asks of it only that it be a string; decoding it (UTF-8 to a JS
 * string: 5–8 ms per MiB of multibyte text) and parsing it, only so the
 * schema check can look at its type, was most of what a 1 MiB argument cost.
 *
 * Here the value is read from the frame with the scanner (scanJson, already
 * known valid), one level of members at a time: keys are decoded (they are
 * short), numbers from their few bytes (Number() of a JSON number is what
 * JSON.parse makes of it), strings only when a keyword needs their text
 * (const, enum, pattern, a length bound the byte count cannot settle).
 *
 * Like quick-check.ts it only ever says yes or "ask the slow path" (the
 * value parsed, the value quick check, then the library), and it repeats
 * quick-check.ts's Rule keyword by keyword over the same helpers, so it
 * passes exactly what that passes, except where it cannot decide cheaply: a
 * pattern on a string longer than DECODE_MAX bytes, or more rescanning than
 * RESCAN_FACTOR times the arguments' size (deeply nested arrays). Those ask
 * the slow path. test/gate/schema/quick-bytes.test.js compares the two.
 */
import { scanJson, stringValue, type JsonNode, type MemberMap } from '../../wire/json-scan.js';
import { ARRAY, BOOLEAN, NULL, NUMBER, OBJECT, STRING, codePoints, lengthWithin, numberWithin, typeAllows, type Primitive, type Rule } from './quick-check.js';

/** Strings up to this many bytes are decoded when a keyword needs their text; longer ones only for const/enum. */
export const DECODE_MAX = 64 * 1024;
/** Bytes rescanned (to reach nested members and items) past this multiple of the arguments' size: ask the slow path. */
const RESCAN_FACTOR = 8;
/** An escaped surrogate pair (`\uD83D\uDE00`) is the most bytes one counted character can take. */
const MAX_BYTES_PER_CHARACTER = 12;
/** A UTF-16 unit takes at most this many bytes (`\u00e9`; a raw 4-byte character is two units). */
const MAX_BYTES_PER_UNIT = 6;
const BACKSLASH = 0x5c;

/**
 * True only when the JSON value in `frame[start, end)` (scanned: valid JSON,
 * valid UTF-8, no duplicate keys) passes `rule`, as the library would find
 * the value JSON.parse makes of those bytes; false: ask the slow path.
 */
export function bytesPass(rule: Rule, frame: Buffer, start: number, end: number): boolean {
  return bytesVerdict(rule, frame, start, end) === 'valid';
}

/** bytesPass's answer with its reason: 'invalid' (the value quick check says no too) or 'unsure' (not decided cheaply). */
export function bytesVerdict(rule: Rule, frame: Buffer, start: number, end: number): 'valid' | 'invalid' | 'unsure' {
  const check = new BytesCheck(frame, (end - start) * RESCAN_FACTOR);
  try {
    const node = check.rescan(start, end);
    if (node === null) return 'unsure';
    const passed = check.passes(node, rule);
    return check.unsure ? 'unsure' : passed ? 'valid' : 'invalid';
  } catch {
    // Nothing should throw here; the stack (a value nested deeper than it) is the one conceivable case.
    return 'unsure';
  }
}

class BytesCheck {
  /** Set when a verdict could not be reached cheaply: whatever passes() said, the answer is "ask". */
  unsure = false;
  /** Members and items of the nodes rescanned so far (the scanner records two levels of object members per scan). */
  private rescanned: Map<JsonNode, JsonNode> | undefined;
  /** Strings decoded so far. */
  private texts: Map<JsonNode, string> | undefined;

  constructor(
    private readonly frame: Buffer,
    private budget: number,
  ) {}

  /** `frame[start, end)` scanned afresh with its members (and, for an array, its items) recorded; null past the budget. */
  rescan(start: number, end: number): JsonNode | null {
    this.budget -= end - start;
    if (this.budget < 0) return null;
    const scanned = scanJson(this.frame, start, end);
    return scanned.ok ? scanned.value : null;
  }

  passes(node: JsonNode, rule: Rule): boolean {
    if (rule.always !== null) return rule.always;
    const bit = bitOf(node.type);
    const n = bit === NUMBER ? this.number(node) : 0;
    if (rule.typed && !typeAllows(rule, bit, n)) return false;
    if (rule.hasConst && !this.equals(node, bit, n, rule.constValue)) return false;
    if (rule.enumValues !== null && !this.inEnum(node, bit, n, rule.enumValues)) return false;
    if (rule.not !== null && this.passes(node, rule.not)) return false;
    if (rule.anyOf !== null && !this.anyPasses(node, rule.anyOf)) return false;
    if (rule.allOf !== null) for (let i = 0; i < rule.allOf.length; i++) if (!this.passes(node, rule.allOf[i]!)) return false;
    if (rule.oneOf !== null && this.countPassing(node, rule.oneOf) !== 1) return false;
    if (rule.ifRule !== null) {
      if (this.passes(node, rule.ifRule)) {
        if (rule.thenRule !== null && !this.passes(node, rule.thenRule)) return false;
      } else if (rule.elseRule !== null && !this.passes(node, rule.elseRule)) return false;
    }
    if (bit === OBJECT) return this.objectPasses(node, rule);
    if (bit === ARRAY) return this.arrayPasses(node, rule);
    if (bit === NUMBER) return numberWithin(rule, n);
    if (bit === STRING) return this.stringPasses(node, rule);
    return true;
  }

  private anyPasses(node: JsonNode, rules: readonly Rule[]): boolean {
    for (let i = 0; i < rules.length; i++) if (this.passes(node, rules[i]!)) return true;
    return false;
  }

  private countPassing(node: JsonNode, rules: readonly Rule[]): number {
    let count = 0;
    for (let i = 0; i < rules.length; i++) if (this.passes(node, rules[i]!)) count++;
    return count;
  }

  /** `value === constant` of quick-check.ts, for the value these bytes parse to. */
  private equals(node: JsonNode, bit: number, n: number, constant: Primitive): boolean {
    switch (bit) {
      case NULL:
        return constant === null;
      case BOOLEAN:
        return constant === (node.type === 'true');
      case NUMBER:
        return constant === n;
      case STRING:
        return typeof constant === 'string' && this.textEquals(node, constant);
      default:
        return false; // objects and arrays never equal a primitive
    }
  }

  private inEnum(node: JsonNode, bit: number, n: number, values: readonly Primitive[]): boolean {
    for (let i = 0; i < values.length; i++) if (this.equals(node, bit, n, values[i]!)) return true;
    return false;
  }

  /** Whether the string decodes to `text`: settled by the byte count when it can be (each UTF-16 unit is 1–6 bytes). */
  private textEquals(node: JsonNode, text: string): boolean {
    const body = node.end - node.start - 2;
    if (text.length > body || body > MAX_BYTES_PER_UNIT * text.length) return false;
    return this.text(node) === text;
  }

  private stringPasses(node: JsonNode, rule: Rule): boolean {
    const body = node.end - node.start - 2;
    if (rule.minLength >= 0 || rule.maxLength !== Infinity) {
      // The library's length is at most one per byte, and at least one per MAX_BYTES_PER_CHARACTER bytes.
      if (body > rule.maxLength || rule.minLength * MAX_BYTES_PER_CHARACTER > body) {
        const length = body <= DECODE_MAX ? codePoints(this.text(node)) : countCodePoints(this.frame, node.start + 1, node.end - 1);
        if (!lengthWithin(rule, length)) return false;
      }
    }
    if (rule.pattern === null) return true;
    if (body > DECODE_MAX && this.texts?.has(node) !== true) {
      this.unsure = true;
      return false;
    }
    return rule.pattern.test(this.text(node));
  }

  private objectPasses(node: JsonNode, rule: Rule): boolean {
    const members = this.membersOf(node);
    if (members === null) return this.giveUp();
    const required = rule.required;
    if (required !== null) for (let i = 0; i < required.length; i++) if (!members.has(required[i]!)) return false;
    const names = rule.propNames;
    for (let i = 0; i < names.length; i++) {
      const member = members.get(names[i]!);
      if (member !== undefined && !this.passes(member, rule.propRules[i]!)) return false;
    }
    const additional = rule.additional;
    if (additional === null) return true;
    for (const [key, member] of members) {
      if (rule.propSet!.has(key)) continue;
      if (!this.passes(member, additional)) return false;
    }
    return true;
  }

  private arrayPasses(node: JsonNode, rule: Rule): boolean {
    if (rule.items === null && rule.minItems < 0 && rule.maxItems === Infinity) return true;
    const items = this.itemsOf(node);
    if (items === null) return this.giveUp();
    if (items.length > rule.maxItems || items.length < rule.minItems) return false;
    const each = rule.items;
    if (each !== null) for (let i = 0; i < items.length; i++) if (!this.passes(items[i]!, each)) return false;
    return true;
  }

  private membersOf(node: JsonNode): MemberMap | null {
    if (node.members !== undefined) return node.members;
    return this.full(node)?.members ?? null;
  }

  private itemsOf(node: JsonNode): JsonNode[] | null {
    if (node.items !== undefined) return node.items;
    return this.full(node)?.items ?? null;
  }

  /** The node rescanned on its own (once), so that its members or items are recorded. */
  private full(node: JsonNode): JsonNode | null {
    let full = this.rescanned?.get(node);
    if (full === undefined) {
      const scanned = this.rescan(node.start, node.end);
      if (scanned === null) return null;
      (this.rescanned ??= new Map()).set(node, (full = scanned));
    }
    return full;
  }

  private giveUp(): false {
    this.unsure = true;
    return false;
  }

  /** A number node's value: Number() of a JSON number's text is JSON.parse's (1e400 is Infinity, -0 is -0). */
  private number(node: JsonNode): number {
    return Number(this.frame.toString('latin1', node.start, node.end));
  }

  /** A string node's text, decoded once. */
  private text(node: JsonNode): string {
    let text = this.texts?.get(node);
    if (text === undefined) (this.texts ??= new Map()).set(node, (text = stringValue(this.frame, node)));
    return text;
  }
}

function bitOf(type: JsonNode['type']): number {
  switch (type) {
    case 'object':
      return OBJECT;
    case 'array':
      return ARRAY;
    case 'string':
      return STRING;
    case 'number':
      return NUMBER;
    case 'null':
      return NULL;
    default:
      return BOOLEAN;
  }
}

/**
 * The library's length (quick-check.ts codePoints) of the string whose body
 * (between the quotes, valid: scanned) is `buf[start, end)`, without
 * decoding it: one per UTF-8 lead byte, one per escape, one per escaped
 * surrogate pair (the scanner refuses lone surrogates, escaped or not).
 */
export function countCodePoints(buf: Buffer, start: number, end: number): number {
  let count = 0;
  let i = start;
  while (i < end) {
    const c = buf[i]!;
    if (c === BACKSLASH) {
      count++;
      // `\uD8xx`–`\uDBxx` (a high surrogate) is always followed by its low half: 12 bytes, one character.
      i += buf[i + 1] !== 0x75 ? 2 : isHighSurrogateEscape(buf, i) ? 12 : 6;
      continue;
    }
    if ((c & 0xc0) !== 0x80) count++;
    i++;
  }
  return count;
}

/** The `\uXXXX` at `i` is D800–DBFF. */
function isHighSurrogateEscape(buf: Buffer, i: number): boolean {
  const d = buf[i + 2]!;
  const x = buf[i + 3]! | 0x20; // lower case
  return (d === 0x44 || d === 0x64) && (x === 0x38 || x === 0x39 || x === 0x61 || x === 0x62);
}
