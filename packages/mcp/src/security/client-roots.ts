import { realpath } from "node:fs/promises";
import { isAbsolute, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { InvalidRequestError } from "@taskledger/core";

// A client that takes longer than this to list its roots is treated as an error, not waited on.
const listTimeoutMs = 10_000;

/**
 * Where runs may work: inside the client's MCP roots, or the server's start directory when the
 * client has none. Symlinks are resolved before comparing, so a link cannot lead outside.
 */
export class ClientRoots {
  constructor(
    private readonly server: Server,
    private readonly startDirectory: string,
  ) {}

  /** The allowed directories, real paths, the client's first root first. */
  async directories(): Promise<string[]> {
    return (await this.#allowed()).directories;
  }

  async #allowed(): Promise<{ directories: string[]; fromClient: boolean }> {
    const listed = this.server.getClientCapabilities()?.roots
      ? (await this.server.listRoots(undefined, { timeout: listTimeoutMs })).roots
      : [];
    const paths = listed.flatMap((root) => {
      try {
        return root.uri.startsWith("file:") ? [fileURLToPath(root.uri)] : [];
      } catch {
        return [];
      }
    });
    const real = await Promise.all(
      (paths.length > 0 ? paths : [this.startDirectory]).map((p) => realpath(p).catch(() => "")),
    );
    return { directories: real.filter(Boolean), fromClient: paths.length > 0 };
  }

  /** The real path of `directory` (default: the first root); a tool error when outside them. */
  async resolve(directory: string | undefined): Promise<string> {
    const { directories: allowed, fromClient } = await this.#allowed();
    const base = allowed[0];
    if (!base) throw new InvalidRequestError("None of your roots is a directory on this machine.");
    const wanted =
      directory === undefined ? base : isAbsolute(directory) ? directory : resolve(base, directory);
    let real: string;
    try {
      real = await realpath(wanted);
    } catch {
      throw new InvalidRequestError(`The directory ${wanted} does not exist.`);
    }
    if (!allowed.some((root) => isInside(real, root)))
      throw new InvalidRequestError(
        fromClient
          ? `The directory ${wanted} is outside your roots (${allowed.join(", ")}); taskledger works only inside them.`
          : `The directory ${wanted} is outside ${base}, where taskledger mcp was started; with no roots from the client it works only there.`,
      );
    return real;
  }

  /** True when `directory` is inside one of the roots now. */
  async contains(directory: string): Promise<boolean> {
    const real = await realpath(directory).catch(() => directory);
    return (await this.directories()).some((root) => isInside(real, root));
  }
}

/** True when `path` is `root` or below it (both real paths). */
export function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : root + sep);
}
