import { closeSync, openSync, readSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { ExecutorError } from "@taskledger/core";
import { isExecutable, packageFile } from "../agent/agent-binary.js";

// The binary comes in opencode-ai's platform package (an optional dependency), found directly: its
// install script is not needed, so a host whose npm skips scripts is not the cause.
const installHint =
  `Install it with \`npm install opencode-ai\`, with optional dependencies (its platform package, ` +
  `opencode-${process.platform === "win32" ? "windows" : process.platform}-${process.arch}, holds ` +
  "the binary), or pass `binaryPath` with the path of an opencode executable.";

/**
 * Where the opencode executable is: `binaryPath` when given, else the platform package that the
 * `opencode-ai` dependency installs (found directly, so a skipped postinstall does not matter),
 * else `opencode-ai`'s own bin. Throws `ExecutorError` saying how to install it.
 */
export function resolveOpencodeBinary(binaryPath?: string): string {
  if (binaryPath !== undefined) {
    if (isExecutable(binaryPath)) return binaryPath;
    throw new ExecutorError(
      `opencode binary not found or not executable: ${binaryPath}. ${installHint}`,
    );
  }
  const require = createRequire(import.meta.url);
  const executable = process.platform === "win32" ? "opencode.exe" : "opencode";
  for (const name of platformPackages()) {
    const found = packageFile(require, name, join("bin", executable));
    if (found && isExecutable(found)) return found;
  }
  const wrapper = packageFile(require, "opencode-ai", join("bin", "opencode.exe"));
  // Until its postinstall runs, opencode-ai's bin is a shell script that only prints an error.
  if (wrapper && isExecutable(wrapper) && !isPlaceholderScript(wrapper)) return wrapper;
  throw new ExecutorError(
    `opencode binary not found for ${process.platform}-${process.arch}. ${installHint}`,
  );
}

function platformPackages(): string[] {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  const base = `opencode-${platform}-${process.arch}`;
  return [base, `${base}-baseline`, `${base}-musl`, `${base}-baseline-musl`];
}

function isPlaceholderScript(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const head = Buffer.alloc(200);
    const read = readSync(fd, head, 0, head.length, 0);
    return head.subarray(0, read).toString("latin1").includes("postinstall script was not run");
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
