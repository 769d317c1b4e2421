import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { InvalidConfigError } from "./errors.js";

/** The agents' directory must exist, be a directory and be writable, or no attempt can work. */
export async function checkWorkingDirectory(cwd: string): Promise<void> {
  let isDirectory: boolean;
  try {
    isDirectory = (await stat(cwd)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new InvalidConfigError(
      code === "ENOENT"
        ? `The working directory ${cwd} does not exist.`
        : `The working directory ${cwd} cannot be used: ${(error as Error).message}`,
    );
  }
  if (!isDirectory)
    throw new InvalidConfigError(`The working directory ${cwd} is not a directory.`);
  try {
    await access(cwd, constants.W_OK | constants.X_OK);
  } catch {
    throw new InvalidConfigError(`The working directory ${cwd} is not writable by this process.`);
  }
}
