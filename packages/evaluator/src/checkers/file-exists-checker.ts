import { stat } from "node:fs/promises";
import { oneLine } from "@taskledger/core";
import type { Checker, CheckResult } from "./checker.js";
import { outsideWorkspace, resolveInside } from "./workspace-path.js";

/** Complete when `path` (relative to the working directory, and inside it) exists. */
export function fileExistsChecker(path: string, options: { name?: string } = {}): Checker {
  const shown = oneLine(path, 180);
  return {
    name: options.name ?? `file-exists: ${shown}`,
    async check({ cwd }): Promise<CheckResult> {
      const target = await resolveInside(cwd, path);
      if (target === undefined) return outsideWorkspace(shown);
      const info = await stat(target).catch(() => undefined);
      if (!info) {
        return {
          complete: false,
          detail: "missing",
          feedback: `The file \`${shown}\` must exist in the working directory but does not. Create it.`,
        };
      }
      const kind = info.isDirectory() ? "a directory" : `${info.size} bytes`;
      return { complete: true, detail: `exists (${kind})` };
    },
  };
}
