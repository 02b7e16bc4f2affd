// The command line as a person meets it: help for every subcommand, a refusal
// with a suggestion for a mistyped one, a record directory that cannot work
// refused before the server starts, and the completion scripts.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { closestSubcommand, editDistance } from '../../dist/cli/help.js';
import { killStarted, runCommand, runGuard, sessionEnd, tempDir, BIN } from '../helpers/run.js';

after(killStarted);

const TIMEOUT = 20000;
const SUBCOMMANDS = ['check', 'sessions', 'activity', 'show', 'logs', 'verify', 'prune', 'pins', 'help', 'completion'];
const VIEWS = ['sessions', 'activity', 'show', 'verify'];
const isRoot = process.geteuid?.() === 0;
const hasSetpriv = spawnSync('setpriv', ['--version']).status === 0;

describe('help everywhere', () => {
  test('the main --help, -h and help list every subcommand with one line, and exit 0', { timeout: TIMEOUT }, async () => {
    for (const args of [['--help'], ['-h'], ['help'], ['--grace', '5s', '--help']]) {
      const r = await runGuard(args, { timeout: TIMEOUT }).done;
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      const text = r.stdout.toString();
      const listed = text.slice(text.indexOf('Subcommands:'));
      for (const name of SUBCOMMANDS) assert.match(listed, new RegExp(`^  ${name} +\\S`, 'm'), `${args.join(' ')} lists ${name}`);
      assert.match(text, /--records on\|best-effort\|off/);
    }
  });

  test('every subcommand prints its own usage for --help, -h and help NAME, and exits 0', { timeout: TIMEOUT * 2 }, async () => {
    for (const name of SUBCOMMANDS) {
      const pages = [];
      for (const args of [
        [name, '--help'],
        [name, '-h'],
        ['help', name],
      ]) {
        const r = await runGuard(args, { timeout: TIMEOUT }).done;
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
        assert.equal(r.stderr, '', args.join(' '));
        assert.match(r.stdout.toString(), new RegExp(`^Usage:\\n {2}mcpguard ${name}\\b`), args.join(' '));
        pages.push(r.stdout.toString());
      }
      assert.equal(pages[1], pages[0], `${name} -h is ${name} --help`);
      assert.equal(pages[2], pages[0], `help ${name} is ${name} --help`);
    }
  });

  test("a view's --help wins wherever it stands among its arguments, and its page names its options and exit codes", { timeout: TIMEOUT * 2 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      for (const view of VIEWS) {
        const r = await runGuard([view, 'abc', `--record-dir=${dir}`, '--json', '--help'], { timeout: TIMEOUT }).done;
        assert.equal(r.code, 0, `${view}: ${r.stderr}`);
        const page = r.stdout.toString();
        for (const option of ['--record-dir DIR', '--json']) assert.ok(page.includes(option), `${view} --help names ${option}`);
        assert.match(page, /Exit status: 0 /);
        // Each option the page names is one the view accepts.
        const named = [...page.matchAll(/^ {2}(--[a-z-]+)/gm)].map((m) => m[1]);
        for (const option of named) {
          const args =
            option === '--record-dir'
              ? [view, `${option}=${dir}`]
              : option === '--audit-key-file'
                ? [view, `--record-dir=${dir}`, `${option}=/nonexistent-key`]
                : [view, `--record-dir=${dir}`, option];
          const run = await runGuard(args, { timeout: TIMEOUT }).done;
          assert.doesNotMatch(run.stderr, /unknown option/, `${view} accepts ${option}`);
        }
      }
      const verify = await runGuard(['verify', '--help'], { timeout: TIMEOUT }).done;
      assert.match(verify.stdout.toString(), /--allow-unsealed/);
      assert.match(verify.stdout.toString(), /\b2 intact, but some log is unsealed/);
    } finally {
      cleanup();
    }
  });

  test('help for something that is no subcommand is exit 125 with a suggestion', { timeout: TIMEOUT }, async () => {
    const r = await runGuard(['help', 'sesions'], { timeout: TIMEOUT }).done;
    assert.equal(r.code, 125);
    assert.match(r.stderr, /no subcommand 'sesions'; did you mean 'sessions'\?/);
  });
});

describe('a mistyped subcommand is refused, a server command still runs', () => {
  test('sesions, verfy, activty: "did you mean", exit 125, nothing spawned', { timeout: TIMEOUT }, async () => {
    for (const [typo, meant] of [
      ['sesions', 'sessions'],
      ['verfy', 'verify'],
      ['activty', 'activity'],
      ['shwo', 'show'],
      ['chekc', 'check'],
      ['SESSIONS', 'sessions'],
    ]) {
      const r = await runGuard([typo, '--json'], { timeout: TIMEOUT }).done;
      assert.equal(r.code, 125, `${typo}: ${r.stderr}`);
      assert.ok(r.stderr.includes(`unknown command '${typo}': did you mean '${meant}'?`), r.stderr);
      assert.ok(r.stderr.includes(`mcpguard [options] -- ${typo}`), 'says how to run a program of that name');
      assert.equal(sessionEnd(r.stderr), null, 'no session ran');
    }
  });

  test("a subcommand's name after relay options is refused with where its options go", { timeout: TIMEOUT }, async () => {
    const r = await runGuard(['--grace', '1s', 'sessions'], { timeout: TIMEOUT }).done;
    assert.equal(r.code, 125);
    assert.match(r.stderr, /'sessions' is a subcommand: mcpguard sessions \[options\]/);
    const dash = await runGuard(['-v'], { timeout: TIMEOUT }).done;
    assert.equal(dash.code, 125);
    assert.match(dash.stderr, /unknown option -v/);
  });

  test("a server named 'session': runs after --, and without -- when it is on PATH; refused when it is not", { timeout: TIMEOUT * 2 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      const marker = join(dir, 'ran');
      writeFileSync(join(bin, 'session'), `#!/bin/sh\necho ran >> '${marker}'\n`, { mode: 0o755 });
      const env = { PATH: `${bin}:${process.env.PATH}`, MCPGUARD_HOME: join(dir, 'records') };
      const dashed = await runGuard(['--', 'session'], { env, timeout: TIMEOUT }).done;
      assert.equal(dashed.code, 0, dashed.stderr);
      assert.equal(sessionEnd(dashed.stderr)?.exit_code, 0);
      const bare = await runGuard(['session'], { env, timeout: TIMEOUT }).done;
      assert.equal(bare.code, 0, bare.stderr);
      assert.equal(sessionEnd(bare.stderr)?.exit_code, 0);
      const off = { ...env, PATH: process.env.PATH };
      const missing = await runGuard(['session'], { env: off, timeout: TIMEOUT }).done;
      assert.equal(missing.code, 125, missing.stderr);
      assert.match(missing.stderr, /did you mean 'sessions'\?/);
      // After --, a word is the command whatever it looks like: not found is 127, as for any command.
      const notFound = await runGuard(['--', 'sesions'], { env: off, timeout: TIMEOUT }).done;
      assert.equal(notFound.code, 127, notFound.stderr);
      assert.equal(readFileSync(marker, 'utf8'), 'ran\nran\n', 'the server ran twice: after --, and from PATH without it');
    } finally {
      cleanup();
    }
  });

  test('sh, go, ls, node, python3, ./verify and show.py are commands, never taken for subcommands', () => {
    for (const word of ['sh', 'go', 'ls', 'node', 'python3', 'uvx', 'npx', 'docker', 'deno', 'bun', 'java', './verify', 'show.py', 'bin/sessions', '-x', 's']) {
      assert.equal(closestSubcommand(word), null, word);
    }
    assert.equal(closestSubcommand('sesions'), 'sessions');
    assert.equal(closestSubcommand('sessoins'), 'sessions', 'a swap is one edit');
    assert.equal(closestSubcommand('shw'), 'show');
    assert.equal(closestSubcommand('shoe'), 'show');
    assert.equal(closestSubcommand('hsow'), 'show');
    assert.equal(closestSubcommand('sohw'), 'show');
    assert.equal(closestSubcommand('shot'), 'show');
    assert.equal(closestSubcommand('stow'), 'show');
    assert.equal(closestSubcommand('hel'), 'help');
    assert.equal(closestSubcommand('hello'), null, 'two edits from a 4-letter name is too far');
    assert.equal(editDistance('ca', 'abc'), 3, 'optimal string alignment, not unrestricted Damerau');
    assert.equal(editDistance('verify', 'vreify'), 1);
  });
});

/** mcpguard with a record dir it must refuse: exit 125 naming it, before the server ran. */
async function assertRefused(recordDir, problem, { env = {}, command } = {}) {
  const { dir, cleanup } = tempDir();
  try {
    const marker = join(dir, 'child-ran');
    const args = [`--record-dir=${recordDir}`, '--', 'sh', '-c', `touch '${marker}'`];
    const r = await (command
      ? runCommand(command[0], [...command.slice(1), process.execPath, BIN, ...args], { env, timeout: 10000 })
      : runGuard(args, { env, timeout: 10000 })
    ).done;
    assert.equal(r.code, 125, r.stderr);
    assert.ok(r.stderr.includes(`'${recordDir}'`), `names the directory: ${r.stderr}`);
    assert.match(r.stderr, problem);
    assert.equal(existsSync(marker), false, 'the server never started');
    assert.equal(r.stderr.split('\n').filter(Boolean).length, 1, `one line: ${r.stderr}`);
  } finally {
    cleanup();
  }
}

describe('a bad record directory fails fast and clearly, before the server starts', () => {
  test('/proc/nope and /proc/self/x/y: an error naming procfs, not an endless mkdir', { timeout: TIMEOUT }, async () => {
    await assertRefused(
      '/proc/nope',
      /cannot create record directory '\/proc\/nope': its parent '\/proc' exists but cannot hold a directory \('\/proc' is on procfs/,
    );
    await assertRefused('/proc/self/x/y', /\(at '\/proc\/self\/x'\)/);
    await assertRefused('/proc', /cannot hold mcpguard's files: .*ENOENT.*procfs/);
  });

  test('a file, a dangling symlink, a symlink to a file or to /proc/nope: each says what it is', { timeout: TIMEOUT * 2 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const file = join(dir, 'file');
      writeFileSync(file, '');
      symlinkSync(join(dir, 'none'), join(dir, 'dangling'));
      symlinkSync(file, join(dir, 'to-file'));
      symlinkSync('/proc/nope', join(dir, 'to-proc'));
      await assertRefused(file, /is not a directory/);
      await assertRefused(join(dir, 'dangling'), new RegExp(`is a symbolic link to '${dir}/none', which does not exist`));
      await assertRefused(join(dir, 'dangling', 'sub'), /its parent '.*dangling' is a symbolic link to '.*none', which does not exist/);
      await assertRefused(join(dir, 'to-file'), new RegExp(`\\(a symbolic link to '${file}'\\) is not a directory`));
      await assertRefused(join(dir, 'to-proc'), /is a symbolic link to '\/proc\/nope', which does not exist/);
      assert.deepEqual(readdirSync(dir).sort(), ['dangling', 'file', 'to-file', 'to-proc'], 'nothing was created');
    } finally {
      cleanup();
    }
  });

  test('a read-only directory of your own: the mode and the uid, not a bare EPERM', {
    timeout: TIMEOUT,
    skip: isRoot && hasSetpriv ? false : 'needs root and setpriv to run mcpguard as another user',
  }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      chmodSync(dir, 0o755);
      const ro = join(dir, 'ro');
      mkdirSync(ro, { mode: 0o500 });
      chownSync(ro, 65534, 65534);
      const asNobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
      await assertRefused(
        ro,
        /cannot hold mcpguard's files: creating a file in it failed: EACCES: permission denied \(mode 0500, owner uid 65534; you are uid 65534\)/,
        { command: asNobody, env: { HOME: dir } },
      );
      assert.deepEqual(readdirSync(ro), []);
    } finally {
      cleanup();
    }
  });

  test('--records best-effort: the server runs anyway, and mcpguard says records are off and why', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const marker = join(dir, 'ran');
      const r = await runGuard(['--records', 'best-effort', '--record-dir=/proc/nope', '--', 'sh', '-c', `touch '${marker}'`], { timeout: 10000 }).done;
      assert.equal(r.code, 0, r.stderr);
      assert.ok(existsSync(marker), 'the server ran');
      assert.match(r.stderr, /records are off for this session \(--records best-effort\): cannot create record directory '\/proc\/nope'/);
      assert.equal(sessionEnd(r.stderr)?.exit_code, 0);
      assert.equal(sessionEnd(r.stderr).records.state, 'off', 'the summary, the only account such a session leaves, says so');
      assert.match(sessionEnd(r.stderr).records.reason, /cannot create record directory '\/proc\/nope'/);
      // With a usable directory, best-effort records as on does.
      const records = join(dir, 'records');
      const ok = await runGuard(['--records=best-effort', `--record-dir=${records}`, '--', 'true'], { timeout: 10000 }).done;
      assert.equal(ok.code, 0, ok.stderr);
      assert.doesNotMatch(ok.stderr, /records are off/);
      assert.equal(sessionEnd(ok.stderr).records, undefined);
      assert.equal(readdirSync(records).filter((f) => f.endsWith('.jsonl')).length, 1);
      assert.deepEqual(
        readdirSync(records).filter((f) => !f.endsWith('.jsonl')),
        [],
        'no probe file left behind',
      );
    } finally {
      cleanup();
    }
  });
});

describe('shell completion', () => {
  /** What bash completes for the words of a command line (the last one is being typed). */
  async function complete(words) {
    const script = (await runGuard(['completion', 'bash'], { timeout: TIMEOUT }).done).stdout.toString();
    const quoted = words.map((w) => `'${w}'`).join(' ');
    const r = spawnSync(
      'bash',
      ['--norc', '-c', `${script}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _mcpguard; printf '%s\\n' "\${COMPREPLY[@]}"`],
      { encoding: 'utf8', timeout: TIMEOUT },
    );
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
  }

  test('bash: subcommands, their options, enum values, and the server command after --', { timeout: TIMEOUT * 2 }, async () => {
    assert.deepEqual(await complete(['mcpguard', 'ses']), ['sessions']);
    assert.deepEqual(await complete(['mcpguard', 'verify', '--a']), ['--audit-key-file', '--allow-unsealed']);
    assert.deepEqual(await complete(['mcpguard', '--records', '']), ['on', 'best-effort', 'off']);
    assert.deepEqual(await complete(['mcpguard', 'check', '--protocol-version', '2026']), ['2026-07-28']);
    assert.deepEqual(await complete(['mcpguard', 'help', 'ver']), ['verify']);
    assert.deepEqual(await complete(['mcpguard', 'completion', '']), ['bash', 'zsh']);
    assert.ok((await complete(['mcpguard', '--grace', '1s', '--', 'bas'])).includes('bash'), 'a command name after --');
    assert.deepEqual(await complete(['mcpguard', '--', 'sessions', '--j']), [], 'after -- nothing is an mcpguard option');
  });

  test('zsh: a #compdef script with every subcommand; an unknown shell is exit 125', { timeout: TIMEOUT }, async () => {
    const zsh = await runGuard(['completion', 'zsh'], { timeout: TIMEOUT }).done;
    assert.equal(zsh.code, 0);
    const text = zsh.stdout.toString();
    assert.match(text, /^#compdef mcpguard\n/);
    for (const name of SUBCOMMANDS) assert.ok(text.includes(name), name);
    assert.ok(text.includes("'verify:--audit-key-file') _files"));
    const fish = await runGuard(['completion', 'fish'], { timeout: TIMEOUT }).done;
    assert.equal(fish.code, 125);
    assert.match(fish.stderr, /completion expects bash or zsh, got 'fish'/);
  });
});

const hasZsh = spawnSync('zsh', ['--version']).status === 0;

test('zsh: the script completes subcommands, options, values and the server command', {
  timeout: TIMEOUT,
  skip: hasZsh ? false : 'zsh is not installed',
}, async () => {
  const script = (await runGuard(['completion', 'zsh'], { timeout: TIMEOUT }).done).stdout.toString();
  assert.equal(spawnSync('zsh', ['-n', '-c', script]).status, 0, 'zsh parses it');
  // compadd and the file completers exist only inside a completion widget: stand-ins print what they were given
  // (zsh itself then keeps the words that match what is typed).
  const stubs =
    'compadd() { while [[ $1 != -- ]]; do shift; done; shift; print -l -- "$@"; }; compdef() {}; _files() { print FILES; }; _path_files() { print DIRS; }; _command_names() { print COMMANDS; }';
  const complete = (words) => {
    const r = spawnSync('zsh', ['-f', '-c', `${stubs}\n${script}\nwords=(${words.map((w) => `'${w}'`).join(' ')}); CURRENT=\${#words}; _mcpguard`], {
      encoding: 'utf8',
      timeout: TIMEOUT,
    });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout.split('\n').filter(Boolean);
  };
  assert.deepEqual(complete(['mcpguard', 'ses']), SUBCOMMANDS);
  assert.deepEqual(complete(['mcpguard', 'verify', '--a']), ['--record-dir', '--audit-key-file', '--allow-unsealed', '--json', '--help']);
  assert.deepEqual(complete(['mcpguard', '--records', '']), ['on', 'best-effort', 'off']);
  assert.deepEqual(complete(['mcpguard', 'sessions', '--record-dir', '']), ['DIRS']);
  assert.deepEqual(complete(['mcpguard', '--grace', '1s', '--', 'py']), ['COMMANDS']);
  assert.deepEqual(complete(['mcpguard', '--', 'python3', 'ser']), ['FILES']);
  assert.deepEqual(complete(['mcpguard', 'completion', '']), ['bash', 'zsh']);
});
