/**
 * `mcpguard completion bash|zsh`: a completion script built from the same
 * tables as the help (help.ts, the relay's and check's option tables), so a
 * new option is completed as soon as it exists. Words after `--` are the
 * server's command line: a command name first, then files.
 */
import { GuardError } from '../base/errors.js';
import { SUBCOMMANDS, tableOptions, type HelpOption } from './help.js';
import { RUN_OPTIONS } from './options.js';
import { CLIENT_NAMES } from '../install/clients.js';

/** Subcommands whose words are client names, anywhere before `--`. */
const INSTALLING = new Set(['install', 'uninstall', 'clients']);

/** Run `mcpguard completion SHELL`; resolves to the exit code. */
export async function runCompletion(args: readonly string[]): Promise<number> {
  const [shell, extra] = args;
  if (shell === '--help' || shell === '-h') return write((await import('./help.js')).subcommandHelp('completion'));
  if (extra !== undefined) throw new GuardError('bad_usage', `completion takes one shell, got '${extra}' too (see mcpguard completion --help)`);
  if (shell === 'bash') return write(bashScript(await contexts()));
  if (shell === 'zsh') return write(zshScript(await contexts()));
  throw new GuardError('bad_usage', `completion expects bash or zsh, got ${shell === undefined ? 'nothing' : `'${shell}'`}`);
}

function write(text: string): number {
  process.stdout.write(text);
  return 0;
}

/** What to complete after an option: a directory, a file, one of some words, or anything. */
type ValueKind = { kind: 'dir' } | { kind: 'file' } | { kind: 'words'; words: readonly string[] } | { kind: 'any' };

interface Context {
  /** The subcommand, or '' for the relay (no subcommand). */
  name: string;
  options: { name: string; value: ValueKind | null }[];
  /** Words completed where an option could go, besides the options (help's subcommands, completion's shells). */
  words: readonly string[];
}

/** `mcpguard pins ACTION` (views/pins-command.ts), completed right after `pins`. */
const PINS_ACTIONS = ['list', 'show', 'diff', 'accept', 'forget', 'log'];
/** `mcpguard policy ACTION FILE` (gate/policy-command.ts): the action right after `policy`, then files. */
const POLICY_ACTIONS = ['test', 'check'];
/** Subcommands whose first word is one of their context's words (a subcommand, a shell, an action). */
const WORD_FIRST = ['help', 'completion', 'pins', 'policy'];

const DIR_OPTIONS = new Set(['record-dir', 'cwd']);
const FILE_OPTIONS = new Set(['audit-key-file', 'config', 'policy', 'tools']);

function valueKind(o: HelpOption): ValueKind | null {
  if (o.arg === undefined) return null;
  if (DIR_OPTIONS.has(o.name)) return { kind: 'dir' };
  if (FILE_OPTIONS.has(o.name)) return { kind: 'file' };
  if (o.values !== undefined) return { kind: 'words', words: o.values };
  return { kind: 'any' };
}

async function contexts(): Promise<Context[]> {
  const { CHECK_OPTIONS } = await import('../check/options.js');
  const toContext = (name: string, options: readonly HelpOption[], words: readonly string[] = []): Context => ({
    name,
    options: [...options.map((o) => ({ name: o.name, value: valueKind(o) })), { name: 'help', value: null }],
    words,
  });
  const subcommands = Object.keys(SUBCOMMANDS);
  return [
    toContext('', [...tableOptions(RUN_OPTIONS), { name: 'version', help: '' }], subcommands),
    ...subcommands.map((name) =>
      name === 'check'
        ? toContext(name, tableOptions(CHECK_OPTIONS))
        : toContext(
            name,
            SUBCOMMANDS[name]!.options,
            name === 'help'
              ? subcommands
              : name === 'completion'
                ? ['bash', 'zsh']
                : name === 'pins'
                  ? PINS_ACTIONS
                  : name === 'policy'
                    ? POLICY_ACTIONS
                    : INSTALLING.has(name)
                      ? CLIENT_NAMES
                      : [],
          ),
    ),
  ];
}

const quote = (words: readonly string[]): string => words.join(' ');

function bashScript(all: Context[]): string {
  const optionsCase = all.map((c) => `    '${c.name}') opts='${quote(c.options.map((o) => `--${o.name}`))}'; extra='${quote(c.words)}' ;;\n`).join('');
  const valueCases = all
    .flatMap((c) =>
      c.options
        .filter((o) => o.value !== null)
        .map((o) => {
          const v = o.value!;
          const action =
            v.kind === 'dir'
              ? 'compgen -d -- "$cur"'
              : v.kind === 'file'
                ? 'compgen -f -- "$cur"'
                : v.kind === 'words'
                  ? `compgen -W '${quote(v.words)}' -- "$cur"`
                  : 'true';
          return `    '${c.name}:--${o.name}') ${v.kind === 'any' ? 'COMPREPLY=()' : `mapfile -t COMPREPLY < <(${action})`}; return ;;\n`;
        }),
    )
    .join('');
  return `# bash completion for mcpguard: source <(mcpguard completion bash)
_mcpguard() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} sub='' opts='' extra='' i
  # After --, the words are the server's command line: a command, then files.
  for ((i = 1; i < COMP_CWORD; i++)); do
    if [[ \${COMP_WORDS[i]} == -- ]]; then
      if ((i == COMP_CWORD - 1)); then mapfile -t COMPREPLY < <(compgen -c -- "$cur"); else mapfile -t COMPREPLY < <(compgen -f -- "$cur"); fi
      return
    fi
  done
  case \${COMP_WORDS[1]} in
    ${Object.keys(SUBCOMMANDS).join('|')}) ((COMP_CWORD > 1)) && sub=\${COMP_WORDS[1]} ;;
  esac
  # --option=value: bash splits at '=', so the option is two words back.
  if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then prev=\${COMP_WORDS[COMP_CWORD-2]}; fi
  if [[ $cur == = ]]; then prev=\${COMP_WORDS[COMP_CWORD-1]}; cur=''; fi
  case "$sub:$prev" in
${valueCases}  esac
  case "$sub" in
${optionsCase}  esac
  if [[ $cur == -* ]]; then mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur"); return; fi
  # policy test|check FILE: the policy file.
  if [[ $sub == policy ]] && ((COMP_CWORD > 2)); then mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return; fi
  if [[ -z $sub && $COMP_CWORD -eq 1 ]] || { [[ " ${WORD_FIRST.join(' ')} " == *" $sub "* ]] && ((COMP_CWORD == 2)); } || [[ $sub == install || $sub == uninstall || $sub == clients ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$extra" -- "$cur")
  fi
}
complete -F _mcpguard mcpguard
`;
}

function zshScript(all: Context[]): string {
  const optionsCase = all.map((c) => `    '${c.name}') opts=(${c.options.map((o) => `--${o.name}`).join(' ')}); extra=(${quote(c.words)}) ;;\n`).join('');
  const valueCases = all
    .flatMap((c) =>
      c.options
        .filter((o) => o.value !== null)
        .map((o) => {
          const v = o.value!;
          const action = v.kind === 'dir' ? '_path_files -/' : v.kind === 'file' ? '_files' : v.kind === 'words' ? `compadd -- ${quote(v.words)}` : ':';
          return `    '${c.name}:--${o.name}') ${action}; return ;;\n`;
        }),
    )
    .join('');
  return `#compdef mcpguard
# zsh completion for mcpguard: source <(mcpguard completion zsh) after compinit
_mcpguard() {
  local cur=\${words[CURRENT]} prev=\${words[CURRENT-1]} sub='' i
  local -a opts extra
  # After --, the words are the server's command line: a command, then files.
  for ((i = 2; i < CURRENT; i++)); do
    if [[ \${words[i]} == -- ]]; then
      if ((i == CURRENT - 1)); then _command_names; else _files; fi
      return
    fi
  done
  case \${words[2]} in
    ${Object.keys(SUBCOMMANDS).join('|')}) ((CURRENT > 2)) && sub=\${words[2]} ;;
  esac
  case "$sub:$prev" in
${valueCases}  esac
  case "$sub" in
${optionsCase}  esac
  if [[ $cur == -* ]]; then compadd -- $opts; return; fi
  if [[ $sub == policy ]] && ((CURRENT > 3)); then _files; return; fi
  if [[ -z $sub && $CURRENT -eq 2 ]] || { [[ " ${WORD_FIRST.join(' ')} " == *" $sub "* ]] && ((CURRENT == 3)); } || [[ $sub == install || $sub == uninstall || $sub == clients ]]; then
    compadd -- $extra
  fi
}
if [[ $zsh_eval_context[-1] == loadautofunc ]]; then _mcpguard "$@"; else compdef _mcpguard mcpguard; fi
`;
}
