import { readdir, readFile, readlink } from "node:fs/promises";

/**
 * Live processes (Linux, from `/proc`) whose working directory or environment lies under `root`,
 * the caller excepted: what a run left running.
 */
export async function processesUnder(root: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const [environ, cwd] = await Promise.all([
      readFile(`/proc/${name}/environ`, "utf8").catch(() => ""),
      readlink(`/proc/${name}/cwd`).catch(() => ""),
    ]);
    if (environ.includes(root) || cwd.startsWith(root)) found.push(Number(name));
  }
  return found;
}
