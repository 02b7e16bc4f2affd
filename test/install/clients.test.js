// Where each client's files are looked for, per platform, from HOME,
// XDG_CONFIG_HOME, APPDATA, LOCALAPPDATA and CODEX_HOME only (so tests and
// users can point them anywhere), and the completion of client names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { envFrom, findFiles } from '../../dist/install/clients.js';
import { runGuard, tempDir } from '../helpers/run.js';

function place(root, paths) {
  for (const p of paths) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), '{}');
  }
}

const found = (root, env, platform, names = []) =>
  findFiles(envFrom(env, join(root, 'project'), platform), names).map((f) => [f.client, f.path.slice(root.length + 1), f.key, f.format]);

test('macOS: Application Support for Claude Desktop and VS Code, ~/.config for Zed', () => {
  const { dir, cleanup } = tempDir('mcpguard-clients-');
  try {
    place(dir, [
      'home/Library/Application Support/Claude/claude_desktop_config.json',
      'home/Library/Application Support/Code/User/mcp.json',
      'home/Library/Application Support/Code - Insiders/User/mcp.json',
      'home/.config/zed/settings.json',
      'home/.codex/config.toml',
    ]);
    assert.deepEqual(found(dir, { HOME: join(dir, 'home') }, 'darwin'), [
      ['claude-desktop', 'home/Library/Application Support/Claude/claude_desktop_config.json', 'mcpServers', 'json'],
      ['vscode', 'home/Library/Application Support/Code/User/mcp.json', 'servers', 'json'],
      ['vscode', 'home/Library/Application Support/Code - Insiders/User/mcp.json', 'servers', 'json'],
      ['codex', 'home/.codex/config.toml', 'mcpServers', 'toml'],
      ['zed', 'home/.config/zed/settings.json', 'context_servers', 'json'],
    ]);
  } finally {
    cleanup();
  }
});

test('Windows: %APPDATA%, and the Microsoft Store build of Claude Desktop under %LOCALAPPDATA%\\Packages', () => {
  const { dir, cleanup } = tempDir('mcpguard-clients-');
  try {
    place(dir, [
      'roaming/Claude/claude_desktop_config.json',
      'local/Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude/claude_desktop_config.json',
      'roaming/Code/User/mcp.json',
      'roaming/Zed/settings.json',
      'codex/config.toml',
      'home/.cursor/mcp.json',
    ]);
    const env = { USERPROFILE: join(dir, 'home'), APPDATA: join(dir, 'roaming'), LOCALAPPDATA: join(dir, 'local'), CODEX_HOME: join(dir, 'codex') };
    assert.deepEqual(
      found(dir, env, 'win32').map(([c, p]) => [c, p]),
      [
        ['claude-desktop', 'roaming/Claude/claude_desktop_config.json'],
        ['claude-desktop', 'local/Packages/Claude_pzs8sxrjxfjjc/LocalCache/Roaming/Claude/claude_desktop_config.json'],
        ['cursor', 'home/.cursor/mcp.json'],
        ['vscode', 'roaming/Code/User/mcp.json'],
        ['codex', 'codex/config.toml'],
        ['zed', 'roaming/Zed/settings.json'],
      ],
    );
  } finally {
    cleanup();
  }
});

test("Linux: XDG_CONFIG_HOME moves Claude Desktop, VS Code and Zed; project files are the current directory's; naming clients limits the search", () => {
  const { dir, cleanup } = tempDir('mcpguard-clients-');
  try {
    place(dir, [
      'xdg/Claude/claude_desktop_config.json',
      'xdg/Code/User/mcp.json',
      'xdg/zed/settings.json',
      'home/.claude.json',
      'project/.mcp.json',
      'project/.cursor/mcp.json',
      'project/.vscode/mcp.json',
      'project/.gemini/settings.json',
      'home/.codeium/windsurf/mcp_config.json',
    ]);
    const env = { HOME: join(dir, 'home'), XDG_CONFIG_HOME: join(dir, 'xdg') };
    assert.deepEqual(
      found(dir, env, 'linux').map(([c, p]) => `${c} ${p}`),
      [
        'claude-desktop xdg/Claude/claude_desktop_config.json',
        'claude-code home/.claude.json',
        'claude-code project/.mcp.json',
        'cursor project/.cursor/mcp.json',
        'windsurf home/.codeium/windsurf/mcp_config.json',
        'gemini project/.gemini/settings.json',
        'vscode xdg/Code/User/mcp.json',
        'vscode project/.vscode/mcp.json',
        'zed xdg/zed/settings.json',
      ],
    );
    assert.deepEqual(
      found(dir, env, 'linux', ['zed', 'cursor']).map(([c]) => c),
      ['cursor', 'zed'],
    );
    assert.equal(envFrom({}, dir, 'linux'), null, 'no HOME: nowhere to look');
  } finally {
    cleanup();
  }
});

test('completion offers the client names after install, uninstall and clients', async () => {
  const r = await runGuard(['completion', 'bash']).done;
  assert.match(
    r.stdout.toString(),
    /'install'\) opts='--server --dry-run --help'; extra='claude-desktop claude-code cursor windsurf gemini vscode codex zed' ;;/,
  );
  assert.match(r.stdout.toString(), /'clients'\) opts='--help'; extra='claude-desktop /);
});
