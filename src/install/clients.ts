/**
 * The agents `mcpguard install` knows, and where each keeps its MCP servers.
 * Every location is built from HOME, XDG_CONFIG_HOME, APPDATA and
 * LOCALAPPDATA (and CODEX_HOME, as Codex reads it), never from the OS's own
 * idea of the home directory, so a test (or a user) can point it anywhere.
 * Project files (.mcp.json, .cursor/mcp.json, .vscode/mcp.json,
 * .gemini/settings.json) are the current directory's.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** How a file holds its servers: JSON(C) objects under some keys, or Codex's TOML tables. */
export type Format = 'json' | 'toml';

/** One config file of one client. */
export interface ConfigFile {
  client: string;
  path: string;
  format: Format;
  /** The key (JSON) under which the servers are, e.g. mcpServers; VS Code's servers, Zed's context_servers. */
  key: string;
  /** Claude Code's ~/.claude.json: servers also under projects["<path>"].mcpServers (local scope). */
  projects: boolean;
}

interface Client {
  name: string;
  title: string;
  /** Candidate files, whether they exist or not. */
  files(env: Env): { path: string; format?: Format; key?: string; projects?: boolean }[];
}

/** The variables and directories the locations are built from. */
export interface Env {
  home: string;
  xdgConfig: string;
  appData: string | undefined;
  localAppData: string | undefined;
  codexHome: string;
  cwd: string;
  platform: NodeJS.Platform;
}

/** The locations' inputs from this process (HOME must be set: there is no other place to look). */
export function envFrom(vars: NodeJS.ProcessEnv, cwd: string, platform: NodeJS.Platform = process.platform): Env | null {
  const home = vars.HOME ?? vars.USERPROFILE;
  if (home === undefined || home === '') return null;
  return {
    home,
    xdgConfig: vars.XDG_CONFIG_HOME !== undefined && vars.XDG_CONFIG_HOME !== '' ? vars.XDG_CONFIG_HOME : join(home, '.config'),
    appData: vars.APPDATA,
    localAppData: vars.LOCALAPPDATA,
    codexHome: vars.CODEX_HOME !== undefined && vars.CODEX_HOME !== '' ? vars.CODEX_HOME : join(home, '.codex'),
    cwd,
    platform,
  };
}

/** A per-user application directory: macOS's Application Support, Windows's APPDATA, else XDG_CONFIG_HOME. */
function appDir(env: Env, name: string): string | null {
  if (env.platform === 'darwin') return join(env.home, 'Library', 'Application Support', name);
  if (env.platform === 'win32') return env.appData === undefined ? null : join(env.appData, name);
  return join(env.xdgConfig, name);
}

const present = <T>(xs: (T | null)[]): T[] => xs.filter((x): x is T => x !== null);

/** Claude Desktop installed from the Microsoft Store (MSIX) keeps its files in a virtualised folder. */
function msixClaude(env: Env): string[] {
  if (env.platform !== 'win32' || env.localAppData === undefined) return [];
  const packages = join(env.localAppData, 'Packages');
  try {
    return readdirSync(packages)
      .filter((d) => d.startsWith('Claude_'))
      .map((d) => join(packages, d, 'LocalCache', 'Roaming', 'Claude', 'claude_desktop_config.json'));
  } catch {
    return [];
  }
}

/** Every client, in the order `clients` lists them. */
export const CLIENTS: readonly Client[] = [
  {
    name: 'claude-desktop',
    title: 'Claude Desktop',
    files: (env) => [
      ...present([appDir(env, 'Claude')]).map((d) => ({ path: join(d, 'claude_desktop_config.json') })),
      ...msixClaude(env).map((path) => ({ path })),
    ],
  },
  {
    name: 'claude-code',
    title: 'Claude Code',
    files: (env) => [{ path: join(env.home, '.claude.json'), projects: true }, { path: join(env.cwd, '.mcp.json') }],
  },
  { name: 'cursor', title: 'Cursor', files: (env) => [{ path: join(env.home, '.cursor', 'mcp.json') }, { path: join(env.cwd, '.cursor', 'mcp.json') }] },
  { name: 'windsurf', title: 'Windsurf', files: (env) => [{ path: join(env.home, '.codeium', 'windsurf', 'mcp_config.json') }] },
  {
    name: 'gemini',
    title: 'Gemini CLI',
    files: (env) => [{ path: join(env.home, '.gemini', 'settings.json') }, { path: join(env.cwd, '.gemini', 'settings.json') }],
  },
  {
    name: 'vscode',
    title: 'VS Code',
    files: (env) => [
      ...present([appDir(env, 'Code'), appDir(env, 'Code - Insiders')]).map((d) => ({ path: join(d, 'User', 'mcp.json'), key: 'servers' })),
      { path: join(env.cwd, '.vscode', 'mcp.json'), key: 'servers' },
    ],
  },
  { name: 'codex', title: 'Codex', files: (env) => [{ path: join(env.codexHome, 'config.toml'), format: 'toml' }] },
  {
    name: 'zed',
    title: 'Zed',
    files: (env) => [
      {
        path:
          env.platform === 'win32' ? (env.appData === undefined ? '' : join(env.appData, 'Zed', 'settings.json')) : join(env.xdgConfig, 'zed', 'settings.json'),
        key: 'context_servers',
      },
    ],
  },
];

/** The client names, for help, completion and the "did you mean" of a wrong one. */
export const CLIENT_NAMES: readonly string[] = CLIENTS.map((c) => c.name);

/** The title people know a client by. */
export function clientTitle(name: string): string {
  return CLIENTS.find((c) => c.name === name)?.title ?? name;
}

/** The config files of `names` (every client if empty) that exist here, each once (a project file may be a user file too). */
export function findFiles(env: Env, names: readonly string[]): ConfigFile[] {
  const seen = new Set<string>();
  const found: ConfigFile[] = [];
  for (const client of CLIENTS) {
    if (names.length > 0 && !names.includes(client.name)) continue;
    for (const f of client.files(env)) {
      if (f.path === '' || seen.has(f.path) || !isFile(f.path)) continue;
      seen.add(f.path);
      found.push({ client: client.name, path: f.path, format: f.format ?? 'json', key: f.key ?? 'mcpServers', projects: f.projects ?? false });
    }
  }
  return found;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
