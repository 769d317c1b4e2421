import { mkdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";

/**
 * `mkdir -p` one level at a time. Node's recursive mkdir never returns for a path under `/proc`
 * (it retries ENOENT forever on a thread); this one fails with the first level that cannot be made.
 */
export async function ensureDirectory(directory: string): Promise<void> {
  const missing: string[] = [];
  let current = resolve(directory);
  for (;;) {
    try {
      const found = await stat(current);
      if (!found.isDirectory()) throw new Error(`${current} is not a directory`);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      missing.push(current);
      const parent = dirname(current);
      if (parent === current) break;
      current = parent;
    }
  }
  for (const level of missing.reverse()) {
    try {
      await mkdir(level);
    } catch (error) {
      // Another process may have made it in between.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
}
