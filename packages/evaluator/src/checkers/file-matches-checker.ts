import { open } from "node:fs/promises";
import { oneLine } from "@taskledger/core";
import type { Checker, CheckResult } from "./checker.js";
import { outsideWorkspace, resolveInside } from "./workspace-path.js";

export interface FileMatchesOptions {
  /** Bytes of the file read and matched, from its start. Default 1 MiB. */
  maxBytes?: number;
  name?: string;
}

const defaultMaxBytes = 1024 * 1024;

/**
 * Complete when the text of `path` matches `pattern`, a JavaScript regular expression applied
 * with the `m` flag (`^` and `$` match at line ends). Only the first `maxBytes` are read.
 */
export function fileMatchesChecker(
  path: string,
  pattern: string,
  options: FileMatchesOptions = {},
): Checker {
  const shown = oneLine(path, 120);
  const shownPattern = oneLine(pattern, 60);
  const maxBytes = options.maxBytes ?? defaultMaxBytes;
  return {
    name: options.name ?? `file-matches: ${shown} /${shownPattern}/`,
    async check({ cwd }): Promise<CheckResult> {
      let regex: RegExp;
      try {
        regex = new RegExp(pattern, "m");
      } catch (error) {
        return {
          complete: false,
          detail: `invalid pattern: ${(error as Error).message}`,
          feedback: `The check's pattern /${shownPattern}/ is not a valid regular expression, so it cannot pass.`,
        };
      }
      const target = await resolveInside(cwd, path);
      if (target === undefined) return outsideWorkspace(shown);
      const read = await readHead(target, maxBytes);
      if (read === undefined) {
        return {
          complete: false,
          detail: "missing",
          feedback: `The file \`${shown}\` must exist and match /${shownPattern}/, but it does not exist. Create it.`,
        };
      }
      const cut = read.truncated ? ` (first ${maxBytes} bytes of a larger file)` : "";
      if (regex.test(read.text)) return { complete: true, detail: `matches${cut}` };
      return {
        complete: false,
        detail: `no match in ${read.bytes} bytes${cut}`,
        feedback: `The file \`${shown}\` exists but its text does not match /${shownPattern}/. Change it so that it does.`,
      };
    },
  };
}

async function readHead(
  path: string,
  maxBytes: number,
): Promise<{ text: string; bytes: number; truncated: boolean } | undefined> {
  const handle = await open(path, "r").catch(() => undefined);
  if (!handle) return undefined;
  try {
    const info = await handle.stat();
    if (info.isDirectory()) return undefined;
    const buffer = Buffer.alloc(Math.min(maxBytes, info.size));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return {
      text: buffer.subarray(0, bytesRead).toString("utf8"),
      bytes: bytesRead,
      truncated: info.size > maxBytes,
    };
  } finally {
    await handle.close();
  }
}
