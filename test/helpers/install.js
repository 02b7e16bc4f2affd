// mcpguard install's tests: every client's config file laid out in a temporary
// HOME (Linux locations), read back by independent parsers (jsonc-parser's
// own parse for JSON, Python's tomllib for TOML), and a server started exactly
// as an agent starts it: argv from the file, an environment with no PATH.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from 'jsonc-parser';
import { FIXTURES, fixture, runGuard } from './run.js';

export const SERVER = fixture('recorder.py');

/** Each fixture, where it goes (from HOME; `project/` is the current directory), its format and servers key. */
export const FILES = [
  { client: 'claude-desktop', src: 'claude_desktop_config.json', at: '.config/Claude/claude_desktop_config.json' },
  { client: 'claude-code', src: 'claude.json', at: '.claude.json', projects: true },
  { client: 'claude-code', src: 'mcp.json', at: 'project/.mcp.json' },
  { client: 'cursor', src: 'cursor-mcp.json', at: '.cursor/mcp.json' },
  { client: 'windsurf', src: 'windsurf-mcp_config.json', at: '.codeium/windsurf/mcp_config.json' },
  { client: 'gemini', src: 'gemini-settings.json', at: '.gemini/settings.json' },
  { client: 'vscode', src: 'vscode-mcp.json', at: '.config/Code/User/mcp.json', key: 'servers' },
  { client: 'codex', src: 'codex-config.toml', at: '.codex/config.toml', toml: true },
  { client: 'zed', src: 'zed-settings.json', at: '.config/zed/settings.json', key: 'context_servers' },
];

/** Lay every fixture out under `home` (transform: e.g. to CRLF); returns { path, bytes } per FILES row. */
export function layOut(home, transform = (t) => t) {
  mkdirSync(join(home, 'project'), { recursive: true });
  return FILES.map((f) => {
    const path = join(home, f.at);
    mkdirSync(dirname(path), { recursive: true });
    const text = transform(
      readFileSync(join(FIXTURES, 'install', f.src), 'utf8')
        .replaceAll('{{SERVER}}', SERVER)
        .replaceAll('{{DIR}}', home),
    );
    writeFileSync(path, text);
    return { ...f, path, bytes: readFileSync(path) };
  });
}

/** `mcpguard ARGS` with HOME and XDG_CONFIG_HOME at `home`, from `home/project`. */
export function guard(home, args, env = {}) {
  return runGuard(args, { cwd: join(home, 'project'), env: { HOME: home, XDG_CONFIG_HOME: join(home, '.config'), CODEX_HOME: '', ...env }, timeout: 60000 })
    .done;
}

/** The servers of a file as its agent reads them: { name, command, args, env, cwd, url }. */
export function serversOf(file) {
  if (file.toml) {
    const r = spawnSync(
      'python3',
      ['-c', 'import json,sys,tomllib; print(json.dumps(tomllib.load(open(sys.argv[1],"rb")).get("mcp_servers",{})))', file.path],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    return Object.entries(JSON.parse(r.stdout)).map(([name, s]) => ({ name, ...s }));
  }
  const errors = [];
  const doc = parse(readFileSync(file.path, 'utf8'), errors, { allowTrailingComma: true });
  assert.deepEqual(errors, [], `${file.path} parses`);
  const servers = [...Object.entries(doc[file.key ?? 'mcpServers'] ?? {})];
  if (file.projects) for (const p of Object.values(doc.projects ?? {})) servers.push(...Object.entries(p.mcpServers ?? {}));
  return servers.map(([name, s]) =>
    s.command !== null && typeof s.command === 'object' ? { name, ...s, ...s.command, command: s.command.path } : { name, ...s },
  );
}

/**
 * Start a server entry as an agent does (argv from the file, its env and cwd,
 * no PATH; HOME as agents pass it), speak initialize, tools/list and one
 * tools/call, and resolve to the answers and mcpguard's session_end line.
 */
export function startAsAgent(server, home) {
  const child = spawn(server.command, server.args ?? [], { env: { HOME: home, ...server.env }, cwd: server.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
  const frames = [
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'agent', version: '1' } } },
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'record', arguments: { a: 2, b: 3 } } },
  ];
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${server.name}: no answer in 30 s; stderr: ${err}`));
    }, 30000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.stdout.on('data', (c) => {
      out += c;
      if (out.split('\n').some((l) => l.includes('"id":3'))) child.stdin.end();
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.stdin.write(frames.map((f) => `${JSON.stringify(f)}\n`).join(''));
    child.on('close', (code) => {
      clearTimeout(timer);
      const answers = out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      const end = err.split('\n').find((l) => l.startsWith('{"mcpguard":"session_end"'));
      resolve({ code, answers, end: end === undefined ? null : JSON.parse(end), stderr: err });
    });
  });
}
