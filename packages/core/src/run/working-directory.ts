import { constants } from "node:fs";
import { access, stat } from "node:fs/promises";
import { InvalidConfigError } from "../errors/errors.js";

/**
 * The agents' directory must be given (a library never defaults to its host's own directory), exist,
 * be a directory and be writable, or no attempt can work. Returns it.
 */
export async function checkWorkingDirectory(cwd: string | undefined): Promise<string> {
  if (cwd === undefined || cwd === "") {
    throw new InvalidConfigError(
      "`cwd` is required: the directory the agents work in, given to createManager or to " +
        "start/run. A library never works in its host's own directory by default.",
    );
  }
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
  return cwd;
}
