import type { Check } from "@taskledger/core";
import type { Checker } from "./checker.js";
import { commandChecker, defaultCommandTimeoutMs } from "./command-checker.js";
import { fileExistsChecker } from "./file-exists-checker.js";
import { fileMatchesChecker } from "./file-matches-checker.js";

export interface DeclaredCheckOptions {
  /** For command checks that declare no timeout of their own. Default 120,000 ms. */
  commandTimeoutMs?: number;
  /** Output bytes kept per stream of a command check. Default 8 KiB. */
  maxOutputBytes?: number;
  /** A command check's environment; default the host's. */
  env?: Readonly<Record<string, string>>;
}

/** The checker that runs one of a sub-task's declared `checks`. */
export function checkerForCheck(check: Check, options: DeclaredCheckOptions = {}): Checker {
  switch (check.type) {
    case "command":
      return commandChecker({
        argv: check.argv,
        timeoutMs: check.timeoutMs ?? options.commandTimeoutMs ?? defaultCommandTimeoutMs,
        ...(options.maxOutputBytes ? { maxOutputBytes: options.maxOutputBytes } : {}),
        ...(options.env ? { env: options.env } : {}),
      });
    case "file-exists":
      return fileExistsChecker(check.path);
    case "file-matches":
      return fileMatchesChecker(check.path, check.pattern);
  }
}
