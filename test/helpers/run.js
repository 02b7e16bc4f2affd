// Helpers for tests that run the real mcpguard binary against real children.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'mcpguard.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');
export const fixture = (name) => join(FIXTURES, name);

// ---- Planted secrets ----
//
// Every process runCommand/runGuard starts gets these variables, so every
// mcpguard in the suite runs with secrets in its environment (and hands them
// to its child). After each run, its stderr (and, for the env values, its
// stdout: protocol frames never carry them) is scanned for them, and so are
// the record files in the helper's temporary directories: a hit fails the
// test, naming the secret and where it was found. Tests that mask on purpose
// use these same values and must still pass.

/**
 * Values of secret-looking names: masked as `[REDACTED:NAME]`. One is longer
 * than 64 bytes and holds `/`. They start with `Z`, which test output seldom
 * ends a write with: a write ending on a value's first byte is held back
 * until the next one (it may be the start of the secret), which would move
 * that byte out of a call's stderr window.
 */
export const PLANTED_ENV = {
  MCPGUARD_TEST_API_TOKEN: 'Zxa5i5UqNHSIHzeFQbU9pf287HFzFKWn117JHN6C',
  MCPGUARD_TEST_LONG_SECRET: 'ZpYfu9blucOZeJ4urD9QqrHPe8VVPN73t4ScOYRqtyZUY28aB8iSRIF9kDZvGcGH/ClNXsMaKhUJYu6qA2Whb2uYsInPSrMk/mzObv3kDX36bqtK',
  MCPGUARD_TEST_DB_PASSWORD: 'ZwAHW80jdf6D6VyROSLJxhvRl',
};

/**
 * Credential shapes, planted under names that do not look secret: only the
 * shape rules can mask them. `body` is what masking must remove (the prefix is kept).
 */
export const PLANTED_SHAPES = {
  MCPGUARD_TEST_SHAPE_OPENAI: { value: 'sk-proj-TPEdALh8bvBrD2Y8GXZUIFgXgV9weU2rIHag', body: 'proj-TPEdALh8bvBrD2Y8GXZUIFgXgV9weU2rIHag' },
  MCPGUARD_TEST_SHAPE_GITHUB: { value: 'ghp_ewkUNuVkXe4XR526PdgkPs8yLzns81nuQ7xZ', body: 'ewkUNuVkXe4XR526PdgkPs8yLzns81nuQ7xZ' },
  MCPGUARD_TEST_SHAPE_AWS: { value: 'AKIAAEHQU1L1X02O83I3', body: 'AEHQU1L1X02O83I3' },
  MCPGUARD_TEST_SHAPE_BEARER: { value: 'Bearer lr6eRLHxRAtWzu8IUrfARsjr', body: 'lr6eRLHxRAtWzu8IUrfARsjr' },
};

/** Every planted variable, for tests that start processes themselves. */
export const PLANTED_VARS = { ...PLANTED_ENV, ...Object.fromEntries(Object.entries(PLANTED_SHAPES).map(([k, v]) => [k, v.value])) };

/** Pieces of a value that must never be seen: its start, its middle and its end (a cut or half-masked secret counts). */
function pieces(text, size) {
  if (text.length <= size) return [text];
  const mid = Math.floor((text.length - size) / 2);
  return [...new Set([text.slice(0, size), text.slice(mid, mid + size), text.slice(-size)])];
}

const NEEDLES = [
  ...Object.entries(PLANTED_ENV).flatMap(([name, value]) => pieces(value, 16).map((piece) => ({ name, piece, env: true }))),
  ...Object.entries(PLANTED_SHAPES).flatMap(([name, { body }]) => pieces(body, 12).map((piece) => ({ name, piece, env: false }))),
];

/** One level of JSON escapes undone (`\u0073`, `\/`, `\"`, `\\`): a secret written escaped still counts. */
function unescaped(text) {
  return text.replace(/\\(u[0-9a-fA-F]{4}|[/"\\])/g, (_, e) => (e[0] === 'u' ? String.fromCharCode(parseInt(e.slice(1), 16)) : e));
}

/**
 * Where planted secrets occur in `output` (Buffer or string), as readable
 * lines; `envOnly` limits the search to the env values (for stdout).
 */
export function findPlanted(output, { envOnly = false } = {}) {
  const raw = Buffer.isBuffer(output) ? output.toString('latin1') : Buffer.from(output, 'utf8').toString('latin1');
  const forms = [['', raw]];
  if (raw.includes('\\')) forms.push([' (JSON-escaped)', unescaped(raw)]);
  const hits = [];
  for (const { name, piece, env } of NEEDLES) {
    if (envOnly && !env) continue;
    for (const [how, text] of forms) {
      const at = text.indexOf(piece);
      if (at === -1) continue;
      hits.push(`${name}${how} at byte ${at}: …${JSON.stringify(text.slice(Math.max(0, at - 40), at + piece.length + 20))}…`);
      break;
    }
  }
  return hits;
}

/** Throw if `output` holds a planted secret; `where` names it in the message. */
export function assertNoPlanted(output, where, options) {
  const hits = findPlanted(output, options);
  if (hits.length > 0) throw new Error(`planted secret leaked in ${where}:\n  ${hits.join('\n  ')}`);
}

/** Record files under `dir` (session logs are `<session id>.jsonl`), read whole. */
function recordFiles(dir) {
  const found = [];
  if (!existsSync(dir)) return found;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.jsonl')) found.push(join(entry.parentPath ?? entry.path, entry.name));
  }
  return found;
}

const scannedSizes = new Map();

/** Scan the record files under `dir` (only those that grew since the last scan, if `incremental`). */
export function assertNoPlantedInRecords(dir, incremental = false) {
  for (const file of recordFiles(dir)) {
    let size;
    try {
      size = statSync(file).size;
    } catch {
      continue;
    }
    if (incremental && scannedSizes.get(file) === size) continue;
    scannedSizes.set(file, size);
    assertNoPlanted(readFileSync(file), `record file ${file}`);
  }
}

// Every mcpguard a test starts keeps its records in this process's own temporary
// home, never in the user's ~/.local/state (tests that inspect records pass --record-dir).
if (!process.env.MCPGUARD_HOME) {
  process.env.MCPGUARD_HOME = mkdtempSync(join(tmpdir(), 'mcpguard-home-'));
  const home = process.env.MCPGUARD_HOME;
  process.on('exit', () => {
    try {
      assertNoPlantedInRecords(home, true);
    } catch (error) {
      process.stderr.write(`${error.message}\n`);
      process.exitCode = 1;
    }
    rmSync(home, { recursive: true, force: true });
  });
}

const started = new Set();

/** Kill every process a test started and is still running (call from after/afterEach). */
export function killStarted() {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {}
    }
  }
  started.clear();
}

/**
 * Run `command args` with `input` written to stdin (then closed unless keepOpen),
 * collect stdout/stderr as raw Buffers. Rejects after `timeout` ms (and kills it);
 * killStarted() kills it too if the test ends first. The environment has the
 * planted secrets; the run rejects if its output or the record home shows one.
 */
export function runCommand(command, args, { input = '', env = {}, timeout = 20000, keepOpen = false, cwd } = {}) {
  const child = spawn(command, args, { env: { ...process.env, ...PLANTED_VARS, ...env }, stdio: ['pipe', 'pipe', 'pipe'], cwd });
  started.add(child);
  const out = [];
  const err = [];
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  child.stdin.on('error', () => {});
  if (input) child.stdin.write(input);
  if (!keepOpen) child.stdin.end();
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {}
      reject(new Error(`${[command, ...args].join(' ')} did not finish within ${timeout} ms; stderr: ${Buffer.concat(err).toString()}`));
    }, timeout);
    child.on('error', (error) => {
      clearTimeout(timer);
      started.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      started.delete(child);
      const stdout = Buffer.concat(out);
      const stderr = Buffer.concat(err);
      const what = [command, ...args].join(' ');
      try {
        assertNoPlanted(stderr, `the stderr of ${what}`);
        assertNoPlanted(stdout, `the stdout of ${what}`, { envOnly: true });
        assertNoPlantedInRecords(process.env.MCPGUARD_HOME, true);
      } catch (error) {
        reject(error);
        return;
      }
      resolve({ code, signal, stdout, stderr: stderr.toString('utf8') });
    });
  });
  return { child, done };
}

/**
 * Run the repository's `mcpguard [...args]` (see runCommand), with
 * mcpguard's own defaults: nothing is added. A test whose fixture calls tools
 * it never lists (records, signals, the wire) says so itself by passing
 * `--validate-args=off`; what users run is tested as users get it.
 */
export function runGuard(args, options = {}) {
  return runCommand(process.execPath, [BIN, ...args], options);
}

/**
 * runGuard for tests about other concerns (records, signals, the wire, the
 * stderr tap) whose fixtures call tools they never list, which the gate would
 * rightly refuse: a relay run gets the gate turned off, by name, unless the
 * test chooses `--validate-args` or a policy itself. Never for documented
 * behaviour or the gate's own tests: those run with mcpguard's defaults.
 */
export function runGuardUngated(args, options = {}) {
  const relay = args.length > 0 && args[0].startsWith('--') && !args[0].startsWith('--help') && !args[0].startsWith('--version');
  const choosesGate = args.some((a) => a.startsWith('--validate-args') || a.startsWith('--policy'));
  return runGuard(relay && !choosesGate ? ['--validate-args=off', ...args] : args, options);
}

/** A temporary directory removed by the returned cleanup, which first scans its record files for planted secrets (and throws on a hit). */
export function tempDir(prefix = 'mcpguard-test-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    cleanup: () => {
      try {
        assertNoPlantedInRecords(dir);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export function readLines(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);
}

/** Frames as JSON lines. */
export const frame = (value) => `${JSON.stringify(value)}\n`;

/** The session_end JSON line mcpguard prints on stderr. */
export function sessionEnd(stderr) {
  const line = stderr.split('\n').find((l) => l.startsWith('{"mcpguard":"session_end"'));
  return line ? JSON.parse(line) : null;
}
