import { homedir } from "node:os";
import { join, resolve } from "node:path";

/**
 * Where taskledger keeps what outlives a run on this machine (worktree slots): `TASKLEDGER_CACHE_DIR`,
 * else the platform's cache directory (`$XDG_CACHE_HOME/taskledger` or `~/.cache/taskledger`,
 * `~/Library/Caches/taskledger`, `%LOCALAPPDATA%\taskledger\Cache`). Outside every repository, so
 * tools that look upward from a slot (module resolution, config files) never find the user's tree.
 */
export function cacheDirectory(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TASKLEDGER_CACHE_DIR) return resolve(env.TASKLEDGER_CACHE_DIR);
  if (process.platform === "darwin") return join(homedir(), "Library", "Caches", "taskledger");
  if (process.platform === "win32") {
    return join(env.LOCALAPPDATA || join(homedir(), "AppData", "Local"), "taskledger", "Cache");
  }
  return join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "taskledger");
}
