/**
 * Help for people: the main `--help`, one page per subcommand, and the
 * "did you mean" for a mistyped subcommand. The subcommands and their options
 * are listed once, here (the relay's and `check`'s options come from their
 * option tables), so `help`, `--help` and the completion scripts agree.
 */
import type { OptionSpec } from '../base/option-table.js';
import { CALL_STATES } from '../mcp/call.js';

/** One option of a subcommand, as help and completion show it. */
export interface HelpOption {
  name: string;
  /** The value it takes, e.g. DIR; absent for a flag. */
  arg?: string;
  /** The words it takes, for completion (an enum's values). */
  values?: readonly string[];
  help: string;
}

interface Subcommand {
  summary: string;
  usage: string;
  about: string;
  /** Listed here for the record views; `check` and the relay list theirs from their option tables. */
  options: readonly HelpOption[];
  exit: string;
}

const RECORD_DIR: HelpOption = {
  name: 'record-dir',
  arg: 'DIR',
  help: 'read the records of this directory (default: as the relay writes them: $MCPGUARD_HOME, else $XDG_STATE_HOME/mcpguard, else ~/.local/state/mcpguard)',
};
const JSON_OUT: HelpOption = { name: 'json', help: 'one JSON object per line instead of a table' };
const VIEW_EXIT =
  'Exit status: 0 success (also when no row passes the filters), 1 no session matches SESSION\n(or a prefix matches more than one), 125 bad usage (a bad option value: the message names\nthe option and the value).';
/** Call states, for completing --state (views/filters.ts checks them against the same list). */
const STATES = CALL_STATES;
const UTC: HelpOption = { name: 'utc', help: 'show times in UTC (and read --since/--until without a zone as UTC)' };
const COLOR: HelpOption = {
  name: 'color',
  arg: 'WHEN',
  values: ['auto', 'always', 'never'],
  help: 'colour failed rows: auto (on a terminal, unless NO_COLOR is set), always, never',
};
const TIMES = `T is a date or date-time, local unless it names a zone: 2026-11-30, 2026-11-30 14:05,
2026-11-30T14:05:00Z, 2026-11-30T14:05+01:00; or a time ago: 90s, 30m, 2h, 7d, 2w; or
today, yesterday, now. --json keeps ISO UTC times.`;

const INSTALL_CLIENTS = `CLIENT: claude-desktop, claude-code (~/.claude.json, user and local scope, and ./.mcp.json),
cursor, windsurf, gemini, vscode (user mcp.json, Insiders, ./.vscode/mcp.json), codex
(~/.codex/config.toml), zed. Locations: see docs/install.md.`;
const INSTALL_EXIT =
  'Exit status: 0 done (also when nothing had to change); 1 a file was refused (cannot be\nparsed, read-only, changed while being edited, or a --server matched nothing), the others\nare still done; 125 bad usage (a bad relay option names the option and the value).';

/** Every subcommand, in the order the main help lists them. */
export const SUBCOMMANDS: Readonly<Record<string, Subcommand>> = {
  check: {
    summary: 'the clean-stdout release test: run a server once and report what breaks the protocol',
    usage: 'mcpguard check [options] -- <command> [args...]',
    about: '',
    options: [],
    exit: '',
  },
  sessions: {
    summary: 'list the recorded sessions, newest first, one row each',
    usage: 'mcpguard sessions [-n N] [--since T] [--until T] [--name GLOB] [--failed] [--running] [--utc] [--color WHEN] [--record-dir DIR] [--json]',
    about: `One row per session log in the record directory, newest first: SESSION (its id),
NAME (--name, else the server's serverInfo.name, else the command's basename),
START (in local time; the header names the zone), DURATION, COMMAND, PROTOCOL, END
(how it ended; a session without a seal is running while its mcpguard runs, checked by
pid and process start time, and crashed once that mcpguard is gone), EXIT (the server's exit code or signal),
RESTARTS (how often --restart started the server again; - without --restart), CALLS, REJECTED (frames
refused), SEALED (yes, no: still running or crashed, torn: the last write was cut).
On a terminal the table fits its width: COMMAND is cut in the middle, then columns
are left out (RESTARTS, PROTOCOL, REJECTED, DURATION, SEALED, COMMAND).
${TIMES}`,
    options: [
      { name: 'max-count', arg: 'N', help: 'at most N sessions, the newest (-n N)' },
      { name: 'since', arg: 'T', help: 'sessions started at or after T' },
      { name: 'until', arg: 'T', help: 'sessions started at or before T' },
      { name: 'name', arg: 'GLOB', help: "sessions whose name matches GLOB (*, ?, [...]; e.g. 'files*')" },
      {
        name: 'failed',
        help: 'sessions whose server exited non-zero, was killed (SIGKILL) or did not start, whose mcpguard crashed, or with a failed call (see activity --failed); why, on a line under each row',
      },
      { name: 'running', help: 'only the sessions whose mcpguard is running' },
      UTC,
      COLOR,
      RECORD_DIR,
      JSON_OUT,
    ],
    exit: VIEW_EXIT,
  },
  activity: {
    summary: 'the calls of one session (the latest unless named), newest first, one row each',
    usage:
      'mcpguard activity [SESSION] [--state S] [--tool GLOB] [--failed] [--since T] [--until T] [-n N] [-f] [--utc] [--color WHEN] [--record-dir DIR] [--json]',
    about: `SESSION is a session id (s_...) or any unique prefix of one, or its log file; without
it, the latest session. One row per call and per rejected frame, newest first: CALL (c_...;
a multi-round call's later legs are indented under its first), TIME (local; the header
names the zone), GEN (only when --restart started the server again: the server generation
the call went to, - if it never reached one), METHOD, TOOL, STATE, STDERR SEEN/KEPT (bytes),
DURATION; --json rows carry "generation" (null: never dispatched). Why a call was
refused or failed goes on an indented line under its row. A call without a final record
is open (the session runs; DURATION is then its age so far, e.g. 12.00s+) or no_final_record
(the session ended or its mcpguard crashed). SESSION last is the latest session too.
${TIMES}`,
    options: [
      {
        name: 'state',
        arg: 'S',
        values: STATES,
        help: 'calls in state S (several: S1,S2): completed, error, tool_error, rejected, denied, cancelled_before_dispatch, cancelled_after_dispatch, timed_out_after_dispatch, unknown_after_dispatch, input_required, stream_ended, open, no_final_record',
      },
      { name: 'tool', arg: 'GLOB', help: "tools/call calls of a tool whose name matches GLOB (e.g. 'read_*')" },
      {
        name: 'failed',
        help: 'failed calls only: error (not a server/discover a legacy server declined), tool_error, rejected, denied, timed_out_after_dispatch, unknown_after_dispatch, no_final_record',
      },
      { name: 'since', arg: 'T', help: 'calls made at or after T' },
      { name: 'until', arg: 'T', help: 'calls made at or before T' },
      { name: 'max-count', arg: 'N', help: 'at most N rows, the newest (-n N)' },
      {
        name: 'follow',
        help: 'list oldest first, then print a row for each call start, call end and rejection as the session writes it (-f); ends when the session record is written or its mcpguard is gone',
      },
      UTC,
      COLOR,
      RECORD_DIR,
      JSON_OUT,
    ],
    exit: VIEW_EXIT,
  },
  show: {
    summary: 'one session (how it started and ended) or one call (every record it left)',
    usage: 'mcpguard show SESSION|CALL [--utc] [--color WHEN] [--record-dir DIR] [--json]',
    about:
      'SESSION and CALL may be any unique prefix of an id (s_..., c_...: take them from\nmcpguard sessions and mcpguard activity), SESSION may be the log file path that activity\nprints, or last (the newest session). A session: name, command, era, start and end, how it\nended, exit, signals sent, forced kill, survivors, stderr counts and tail, calls per\nstate. A call: each record it left (attempt, dispatch, final, decisions), field by field,\nleaving out fields without a value. Times are local, with the zone (UTC with --utc).',
    options: [UTC, COLOR, RECORD_DIR, JSON_OUT],
    exit: VIEW_EXIT,
  },
  logs: {
    summary: 'what the server printed on stderr, for one call or one session',
    usage: 'mcpguard logs SESSION|CALL [--tail N] [--follow] [--utc] [--json] [--record-dir DIR]',
    about:
      'Prints the stderr text the records kept (masked, at most --stderr-call-bytes per call).\nCALL prints that call\'s text; SESSION prints each call that wrote stderr under a\n"==> call ID  METHOD TOOL  STATE  TIME <==" header in the order the calls ended, then\nthe stderr that came while no call was in flight. Either may be any unique prefix of\nan id; SESSION may be a log file path, or last (the newest session). TIME is when the\ncall ended, in local time with the zone (e.g. 2026-11-30 02:00:01 -05:00; UTC with\n--utc). Lost bytes are marked, e.g.\n  [stderr truncated: kept last 16384 of 184320 bytes]\nControl characters other than newline and tab are shown as \\xNN.',
    options: [
      { name: 'tail', arg: 'N', help: 'only the last N lines over all blocks (-n N); a block keeps its header and marker' },
      {
        name: 'follow',
        help: "keep printing as the session writes (-f); ends when the session record is written, or when the session's mcpguard is found gone without one (crashed)",
      },
      { name: 'utc', help: 'show the times in the block headers in UTC (default: local time with the zone)' },
      RECORD_DIR,
      {
        name: 'json',
        help: 'one object per block: kind, session_id, call_id, method, tool, state, ended_at, bytes_seen, bytes_retained, truncated, marker, text',
      },
    ],
    exit: 'Exit status: 0 printed (also when nothing was written on stderr, and when a followed session\ncrashed); 1 no session or call matches, a prefix matches more than one, or a CALL has no final\nrecord (with --follow: its session crashed, so it never will); 125 bad usage.',
  },
  verify: {
    summary: 'check the hash chain of every session log',
    usage: 'mcpguard verify [--record-dir DIR] [--audit-key-file FILE] [--allow-unsealed] [--json]',
    about:
      'Recomputes every chain link and seal. One row per log: STATUS (ok, UNSEALED, TORN,\nTAMPERED, KEY, VERSION, UNREADABLE), FILE, RECORDS; where and why a chain breaks goes on\nan indented line under its row. A last line counts the logs per status.',
    options: [
      RECORD_DIR,
      { name: 'audit-key-file', arg: 'FILE', help: 'the HMAC key the logs were written with (kept outside the record directory)' },
      { name: 'allow-unsealed', help: 'a log that is intact but unsealed or torn (a running session, a crash) is not an error' },
      JSON_OUT,
    ],
    exit: 'Exit status: 0 every chain intact; 1 a chain does not verify (tampering, a wrong or\nmissing key, an unreadable file); 2 intact, but some log is unsealed or torn (0 with\n--allow-unsealed); 125 bad usage.',
  },
  prune: {
    summary: 'remove old session logs (sealed or crashed, never running), leaving tombstones',
    usage: 'mcpguard prune [--older-than AGE] [--max-size SIZE] [--dry-run] [--utc] [--record-dir DIR] [--audit-key-file FILE] [--json]',
    about:
      "Removes whole session logs, oldest first: every one that ended more than AGE ago, then\nmore until the session logs take at most SIZE. Only sealed logs and crashed ones (no seal,\nand the mcpguard that wrote them is gone) are removed; a running session's log never is.\nEach removed log leaves a tombstone in pruned.log in the record directory (a hash chain,\nHMAC-signed with --audit-key-file), so that verify reports it as pruned, not missing.\nAGE: 30d, 12h, 90m, 3600s, 2w. SIZE: 1G, 500M, 64KiB, 1048576 (binary multiples).",
    options: [
      { name: 'older-than', arg: 'AGE', help: 'remove the logs of sessions that ended more than AGE ago' },
      { name: 'max-size', arg: 'SIZE', help: 'then remove the oldest logs until the session logs take at most SIZE' },
      { name: 'dry-run', help: 'only list what would be removed' },
      { name: 'utc', help: 'show when each log ended in UTC (default: local time, the zone in the header)' },
      RECORD_DIR,
      { name: 'audit-key-file', arg: 'FILE', help: 'sign the tombstones with this HMAC key (required when the tombstones already are signed)' },
      { name: 'json', help: 'one object per removed log, then a summary object' },
    ],
    exit: 'Exit status: 0 done (also when nothing had to go); 1 a log could not be removed, or the\ntombstone chain cannot be extended, or another prune is running; 125 bad usage.',
  },
  policy: {
    summary: 'try a policy: what it decides for one call and why (test), or what in it never decides (check)',
    usage:
      'mcpguard policy test FILE --tool NAME [--args JSON] [--annotations JSON | --tools LIST] [--json]\n  mcpguard policy check FILE [--tools LIST] [--json]',
    about:
      "test: the same check of the file and the same decision as the relay (docs/gate.md#policy).\nPaths are judged on this machine from the current directory; without --annotations or\n--tools the tool's annotations are unknown, as for a call before any tools/list. With\n--tools, the listed tool's inputSchema is checked first, as the gate does (decision\nrejected), and its annotations are the listed ones.\ncheck: rules never reached (after a rule with no condition whose tool pattern covers\ntheirs); with --tools, tool patterns that match no listed tool, and, when the default is\nallow, listed tools no rule names. LIST: a saved tools/list answer (its result, the\nwhole JSON-RPC response, or the array of tools).",
    options: [
      { name: 'tool', arg: 'NAME', help: 'test: the tool called' },
      { name: 'args', arg: 'JSON', help: "test: the call's arguments, a JSON object (default {})" },
      { name: 'annotations', arg: 'JSON', help: "test: the tool's annotations as the server lists them, a JSON object" },
      { name: 'tools', arg: 'LIST', help: "a file with the server's tools/list (test: the tool must be in it)" },
      {
        name: 'json',
        help: 'test: one object: decision, rule (its 0-based index, or null for the default), reason, why; check: one array of {rule, kind, message}',
      },
    ],
    exit: 'Exit status: test: 0 decided (whatever the decision); check: 0 no findings, 1 findings;\n125 bad usage or a policy that is not understood.',
  },
  pins: {
    summary: 'the tool definitions pinned per server, the changes held, and accepting them',
    usage:
      'mcpguard pins [list | show NAME | diff NAME | accept NAME [TOOL] | forget NAME | log [NAME]] [--utc] [--record-dir DIR] [--audit-key-file FILE] [--json]',
    about:
      "The first tools/list a server answers behind mcpguard is pinned: a SHA-256 of each tool's\ndefinition (name, title, description, inputSchema, outputSchema, annotations) and of its\ninstructions, in <state>/pins/ID.json. A server is --name if given, else its serverInfo.name\nand command line. NAME is a pin id (or a prefix of 4+ hex digits) or a server name.\n  list                 one row per server: id, name, command, tools, changes held, updated\n  show NAME            its pinned tools and their hashes\n  diff NAME            each held change (new, removed, changed tool; instructions) with its diff\n  accept NAME [TOOL]   the held changes (or one tool's) become the pin\n  forget NAME          remove the pins; the next session pins what the server lists then\n  log [NAME]           the decisions recorded (accept, forget: when, tool, by whom)\nAccept and forget are written to <state>/pins/decisions.log first, a hash chain that verify\nchecks (HMAC-signed with --audit-key-file FILE).\nHidden characters in what a server sent are shown written out (\\u202e).",
    options: [
      RECORD_DIR,
      {
        name: 'audit-key-file',
        arg: 'FILE',
        help: 'sign the recorded decisions with this HMAC key (required when they already are signed; kept outside the record directory)',
      },
      { name: 'utc', help: 'show times in UTC (default: local time, the zone in the header)' },
      JSON_OUT,
    ],
    exit: 'Exit status: 0 success; 1 nothing found (no such NAME, one that fits more than one\nserver, nothing held to accept, no decision recorded about NAME) or decisions.log does not verify;\n125 bad usage. pins log with no decision recorded yet is an empty table, exit 0.',
  },
  export: {
    summary: 'send recorded sessions to an OpenTelemetry backend, as the live export sends them',
    usage: 'mcpguard export otlp [SESSION...] [--since T] [--otlp-endpoint URL] [--record-dir DIR]',
    about:
      "Each recorded call as its SERVER span (the gate's steps as guardrail events), its stderr as\nlogs, each ended session as its root span, over OTLP/HTTP (OTEL_* honoured). Span ids derive\nfrom the session and call ids: exporting twice, or after a live export (--otlp-endpoint),\nsends the same spans again, not new ones. SESSION: an id or a unique prefix (default: all).\nThe span model: docs/otel.md.",
    options: [
      { name: 'since', arg: 'T', help: 'only calls that ended at or after T (2h, today, 2026-07-01)' },
      { name: 'otlp-endpoint', arg: 'URL', help: 'the collector (default: OTEL_EXPORTER_OTLP_ENDPOINT)' },
      RECORD_DIR,
    ],
    exit: 'Exit status: 0 every item accepted; 1 something dropped or failed, or no such session; 125 bad usage or no endpoint.',
  },
  clients: {
    summary: 'the agents found here, their config files and stdio servers, and which are guarded',
    usage: 'mcpguard clients [CLIENT...]',
    about: `${INSTALL_CLIENTS}
Each server is listed as guarded, not guarded, or not guardable (a url/http/sse server).`,
    options: [],
    exit: 'Exit status: 0 listed (also when no config file is found), 1 a file cannot be read or\nparsed (it is named), 125 bad usage.',
  },
  install: {
    summary: 'put mcpguard in front of every stdio server an agent starts, changing nothing else in its config',
    usage: 'mcpguard install [CLIENT...] [--server NAME]... [--dry-run] [-- OPTION...]',
    about: `Each stdio server of the named clients (all found, if none is named) then starts as
  <node> <mcpguard.js> [OPTION...] --name NAME -- <its command> <its args>
with both paths absolute (the agent's PATH may not hold node or mcpguard). Only the
command value and the front of args change; env, cwd, comments, key order, commas and
line endings stay byte for byte, and uninstall gives the original bytes back. A server
already guarded is left as it is. OPTION... are relay options (see mcpguard --help),
checked now; relative paths in them are made absolute. Before the first write the
original is kept as <file>.mcpguard.bak; a write goes to a temporary file renamed over
the config (a symlink stays a symlink), and only if the file did not change meanwhile.
${INSTALL_CLIENTS}`,
    options: [
      { name: 'server', arg: 'NAME', help: 'only the server NAME (repeatable)' },
      { name: 'dry-run', help: 'print a unified diff per file and write nothing' },
    ],
    exit: INSTALL_EXIT,
  },
  uninstall: {
    summary: 'give each guarded server its own command and args back',
    usage: 'mcpguard uninstall [CLIENT...] [--server NAME]... [--dry-run]',
    about: `The command after -- becomes the command again and mcpguard's arguments go; the
rest of the file is not touched. ${INSTALL_CLIENTS}`,
    options: [
      { name: 'server', arg: 'NAME', help: 'only the server NAME (repeatable)' },
      { name: 'dry-run', help: 'print a unified diff per file and write nothing' },
    ],
    exit: INSTALL_EXIT,
  },
  help: {
    summary: 'this help, or the help of one subcommand',
    usage: 'mcpguard help [SUBCOMMAND]',
    about: 'The same as mcpguard --help, or mcpguard SUBCOMMAND --help.',
    options: [],
    exit: 'Exit status: 0, or 125 for an unknown subcommand.',
  },
  completion: {
    summary: 'print a shell completion script (bash or zsh)',
    usage: 'mcpguard completion bash|zsh',
    about:
      'Prints a script that completes subcommands and their options. Load it with\n  source <(mcpguard completion bash)      in ~/.bashrc\n  source <(mcpguard completion zsh)       in ~/.zshrc (after compinit)',
    options: [],
    exit: 'Exit status: 0, or 125 for an unknown shell.',
  },
};

/** The record views: the subcommands that records/commands.ts runs. */
export const RECORD_VIEWS = ['sessions', 'activity', 'show', 'logs', 'verify', 'prune'] as const;

export function isSubcommand(word: string): boolean {
  return Object.hasOwn(SUBCOMMANDS, word);
}

/** An option table (the relay's, check's) as help options. */
export function tableOptions(table: Record<string, OptionSpec>): HelpOption[] {
  return Object.entries(table).map(([name, spec]) => {
    const arg =
      spec.kind === 'flag'
        ? undefined
        : spec.kind === 'enum'
          ? spec.values!.join('|')
          : spec.kind === 'ms'
            ? 'MS'
            : spec.kind === 'bytes'
              ? 'BYTES'
              : spec.kind === 'count'
                ? 'N'
                : spec.kind === 'policy'
                  ? 'FILE'
                  : spec.kind === 'label'
                    ? 'NAME'
                    : spec.kind === 'retain'
                      ? 'AGE,SIZE'
                      : (spec.arg ?? 'VALUE');
    const def = spec.default === null || spec.kind === 'flag' ? '' : ` (default ${spec.default})`;
    return { name, arg, values: spec.kind === 'enum' ? spec.values : undefined, help: `${spec.help}${def}` };
  });
}

/** Options as help lists them: the option and its value on one line, what it does indented below. */
export function optionLines(options: readonly HelpOption[]): string {
  return options.map((o) => `  --${o.name}${o.arg === undefined ? '' : ` ${o.arg}`}\n      ${o.help}\n`).join('');
}

/** The page of one record view (`sessions`, `activity`, `show`, `logs`, `verify`), `help` or `completion`. */
export function subcommandHelp(name: string): string {
  const c = SUBCOMMANDS[name]!;
  const options = c.options.length === 0 ? '' : `\nOptions:\n${optionLines(c.options)}  -h, --help\n      this help\n`;
  return `Usage:\n  ${c.usage}\n\n${c.summary[0]!.toUpperCase()}${c.summary.slice(1)}.\n${c.about === '' ? '' : `${c.about}\n`}${options}\n${c.exit}\n`;
}

/** The main help: usage, every subcommand in one line, the relay's options and exit status. */
export function mainHelp(version: string, relayOptions: readonly HelpOption[]): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((n) => n.length));
  const list = Object.entries(SUBCOMMANDS)
    .map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}\n`)
    .join('');
  return `mcpguard ${version}: a strict supervisor for MCP stdio servers

Usage:
  mcpguard [options] -- <command> [args...]   run an MCP server behind mcpguard
  mcpguard <subcommand> [options]              see the subcommands below

Relays JSON-RPC between the client (mcpguard's stdin/stdout) and the server
(the command's stdin/stdout), one message per line, checking every line in
both directions. See man mcpguard.

Subcommands:
${list}Run mcpguard help <subcommand> (or mcpguard <subcommand> --help) for its options.
A first word that is not a subcommand is the server's command; put the command after --
so that a server named like a subcommand still runs.

Options:
${optionLines(relayOptions)}  -h, --help
      this help
  -V, --version
      print mcpguard's version

Exit status: the server's exit code, or 128+N if it died of signal N
(--restart: a session ended restart_failed or restart_incompatible exits
with the status of the crash it could not recover from, 1 if that was 0);
74 the audit log could not be written (the session was ended there; the
server's own status is in the session summary); 125 bad usage or an
unusable record directory; 126 command found but not executable
(permission, a missing #! interpreter); 127 command not found.
`;
}

/**
 * True when `-h` or `--help` is among a command's options: the words before
 * `--` (and, unless `positionals`, before the first word that is not an
 * option). `valued` names the options that take the next word as their value
 * (that word is skipped).
 */
export function helpRequested(argv: readonly string[], valued: (name: string) => boolean, positionals = false): boolean {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--help' || arg === '-h') return true;
    if (arg === '--') return false;
    if (!arg.startsWith('-')) {
      if (positionals) continue;
      return false;
    }
    if (arg.startsWith('--') && !arg.includes('=') && valued(arg.slice(2))) i++;
  }
  return false;
}

/** The options of a record view that take a value (for `helpRequested`). */
export function viewOptionTakesValue(view: string, name: string): boolean {
  return SUBCOMMANDS[view]?.options.some((o) => o.name === name && o.arg !== undefined) ?? false;
}

/**
 * The subcommand `word` was probably meant to be, or null. Close means an
 * optimal-string-alignment distance (edits, where swapping two neighbours is
 * one edit) of at most 2 from a subcommand of 5 letters or more, at most 1
 * from a shorter one (so `sh` or `go` is never taken for `show` or a
 * 4-letter name), compared without case. A word with '/' or '.' names a file
 * or a script, never a subcommand.
 */
export function closestSubcommand(word: string): string | null {
  if (word.length < 2 || /[/.\\]/.test(word) || word.startsWith('-')) return null;
  const lower = word.toLowerCase();
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const name of Object.keys(SUBCOMMANDS)) {
    const d = editDistance(lower, name);
    if (d <= (name.length >= 5 ? 2 : 1) && d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 0; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
