/**
 * What a schema check says, and the text a model reads when a call is
 * refused for it. The text is a tool execution error (`isError: true`), as
 * the spec asks for input validation errors, so the model can correct its
 * arguments: it names the failing places (JSON Pointers into the
 * arguments) and keywords, is short and deterministic (same call, same
 * text), and quotes no argument values, only member names and the schema's
 * own words. The caller masks it like everything else mcpguard writes.
 */
import { escapeQuoted } from '../../mask/escape.js';

/** One failing place in the arguments (or the structured content). */
export interface SchemaError {
  /** JSON Pointer (RFC 6901) into the checked value; '' is the value itself. */
  path: string;
  /** The schema keyword that failed (`type`, `required`, `additionalProperties` …). */
  keyword: string;
  /** What the keyword wants, in a few words, without the value itself. */
  message: string;
}

export type Verdict =
  | { ok: true }
  | { ok: false; kind: 'invalid'; errors: SchemaError[] }
  /**
   * The schema cannot be used (unsupported dialect, malformed, unresolvable
   * `$ref`, beyond a bound): the call fails closed. `first` is true the
   * first time this tool's schema is refused for this reason, so the caller
   * reports it once.
   */
  | { ok: false; kind: 'unusable'; reason: string; first: boolean }
  /** The server did not list the tool (protocol error -32602 for the caller). */
  | { ok: false; kind: 'unknown_tool' };

export const OK: Verdict = Object.freeze({ ok: true });

/** Failing places named in the text; the rest are counted. */
export const ERRORS_SHOWN = 3;
const PATH_SHOWN = 80;

/** Which value was checked: a call's arguments or a result's structured content. */
export type Subject = 'arguments' | 'output';

/**
 * The text of the tool execution error for a refused verdict (the empty
 * string for `ok`). `tool` is the tool's name as the client wrote it.
 */
export function verdictText(verdict: Verdict, tool: string, subject: Subject = 'arguments'): string {
  if (verdict.ok) return '';
  const name = quote(tool, PATH_SHOWN);
  switch (verdict.kind) {
    case 'invalid': {
      const head =
        subject === 'arguments'
          ? `Invalid arguments for tool ${name}: they do not match the tool's inputSchema, so the call was not sent.`
          : `The structured result of tool ${name} does not match the tool's outputSchema.`;
      const lines = verdict.errors.slice(0, ERRORS_SHOWN).map((e) => `- ${shownPath(e.path)}: ${e.keyword}: ${e.message}`);
      const more = verdict.errors.length - ERRORS_SHOWN;
      if (more > 0) lines.push(`- and ${more} more`);
      const tail = subject === 'arguments' ? 'Correct the arguments and call the tool again.' : '';
      return [head, ...lines, tail].filter((l) => l !== '').join('\n');
    }
    case 'unusable':
      return subject === 'arguments'
        ? `Tool ${name} cannot be called through mcpguard: its inputSchema cannot be checked (${verdict.reason}). The call was not sent; retrying will not help.`
        : `The structured result of tool ${name} was not checked: its outputSchema cannot be checked (${verdict.reason}).`;
    case 'unknown_tool':
      return `Unknown tool ${name}: the server did not list it.`;
  }
}

/** A path as shown: the root by name, a plain pointer as is, anything else quoted and escaped. */
function shownPath(path: string): string {
  if (path === '') return '(root)';
  if (/^[\x21-\x7e]*$/.test(path) && !path.includes('"') && path.length <= PATH_SHOWN) return path;
  return quote(path, PATH_SHOWN);
}

function quote(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  return escapeQuoted(bytes, max, Math.max(0, bytes.length - max));
}
