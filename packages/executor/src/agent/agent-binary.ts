import { accessSync, constants } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { ExecutorError } from "@taskledger/core";

/**
 * An agent's executable: `binaryPath` when given; else the first of `packageFiles` (`package`,
 * path inside it) its npm packages installed, found directly so a skipped postinstall does not
 * matter; else `command` on PATH. Throws `ExecutorError` with `installHint`.
 */
export function resolveAgentBinary(input: {
  binaryPath: string | undefined;
  packageFiles: readonly (readonly [string, string])[];
  command: string;
  installHint: string;
}): string {
  if (input.binaryPath !== undefined) {
    if (isExecutable(input.binaryPath)) return input.binaryPath;
    throw new ExecutorError(
      `${input.command} binary not found or not executable: ${input.binaryPath}. ${input.installHint}`,
    );
  }
  const require = createRequire(import.meta.url);
  for (const [name, file] of input.packageFiles) {
    const found = packageFile(require, name, file);
    if (found && isExecutable(found)) return found;
  }
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const found = join(dir, input.command);
    if (dir && isExecutable(found)) return found;
  }
  throw new ExecutorError(
    `${input.command} binary not found for ${process.platform}-${process.arch}. ${input.installHint}`,
  );
}

export function packageFile(
  require: NodeJS.Require,
  name: string,
  file: string,
): string | undefined {
  try {
    return join(dirname(require.resolve(`${name}/package.json`)), file);
  } catch {
    return undefined;
  }
}

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
