import { type ChildProcess, spawn } from "node:child_process";

export interface GroupSpawnOptions {
  cwd: string;
  env: Record<string, string>;
  /** Written to stdin, which is then closed: opencode reads stdin to its end before it starts. */
  stdin: string;
}

/**
 * Spawns a program (an argument array, never a shell) as the leader of its own process group, so
 * the whole group (its tool subprocesses included) can be signalled at once.
 */
export function spawnGroup(
  file: string,
  args: readonly string[],
  options: GroupSpawnOptions,
): ChildProcess {
  const child = spawn(file, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
    shell: false,
    windowsHide: true,
  });
  child.stdin?.on("error", () => {
    // A child that exits before reading its input closes the pipe; its exit says what happened.
  });
  child.stdin?.end(options.stdin);
  return child;
}
