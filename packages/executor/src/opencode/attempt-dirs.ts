import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/** An attempt's own directories, which opencode gets as its XDG homes, HOME and TMPDIR. */
export interface AttemptDirs {
  root: string;
  config: string;
  data: string;
  state: string;
  cache: string;
  /** opencode's HOME: nothing of the user's home is read through it. */
  home: string;
  /** opencode's TMPDIR: it unpacks a native library there on every start and never deletes it. */
  tmp: string;
}

/**
 * Creates an attempt's own XDG directories. opencode 1.18 npm-installs `@opencode-ai/plugin` into
 * every config directory it loads unless that directory already has `node_modules` and a lockfile
 * naming it; seeding both keeps the run off the network.
 */
export async function createAttemptDirs(
  root: string,
  opencodeVersion: string,
): Promise<AttemptDirs> {
  const dirs: AttemptDirs = {
    root,
    config: join(root, "config"),
    data: join(root, "data"),
    state: join(root, "state"),
    cache: join(root, "cache"),
    home: join(root, "home"),
    tmp: join(root, "tmp"),
  };
  const opencodeConfigDir = join(dirs.config, "opencode");
  await Promise.all([
    mkdir(join(opencodeConfigDir, "node_modules"), { recursive: true }),
    mkdir(dirs.data, { recursive: true }),
    mkdir(dirs.state, { recursive: true }),
    mkdir(dirs.cache, { recursive: true }),
    mkdir(dirs.home, { recursive: true }),
    mkdir(dirs.tmp, { recursive: true }),
  ]);
  const dependencies = { "@opencode-ai/plugin": opencodeVersion };
  await Promise.all([
    writeFile(join(opencodeConfigDir, "package.json"), JSON.stringify({ dependencies })),
    writeFile(
      join(opencodeConfigDir, "package-lock.json"),
      JSON.stringify({ lockfileVersion: 3, packages: { "": { dependencies } } }),
    ),
  ]);
  return dirs;
}
