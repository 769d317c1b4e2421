import { mkdir, open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { StoreError } from "./errors.js";
import type { RunEvent } from "./run-events.js";
import type { RunStore } from "./run-store.js";

const safeRunId = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * One append-only JSON-lines file per run in a directory. Each record is written and flushed to
 * disk before `append` resolves; a torn last line left by a crash is ignored when read back.
 */
export class FileRunStore implements RunStore {
  constructor(readonly directory: string) {}

  async append(runId: string, record: RunEvent): Promise<void> {
    const path = this.pathOf(runId);
    try {
      await mkdir(this.directory, { recursive: true });
      const handle = await open(path, "a");
      try {
        await handle.write(`${JSON.stringify(record)}\n`);
        await handle.datasync();
      } finally {
        await handle.close();
      }
    } catch (cause) {
      throw new StoreError(`Cannot append to ${path}: ${(cause as Error).message}`, { cause });
    }
  }

  async read(runId: string): Promise<RunEvent[]> {
    const path = this.pathOf(runId);
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new StoreError(`Cannot read ${path}: ${(cause as Error).message}`, { cause });
    }
    const lines = text.split("\n");
    // Everything after the last newline is a record whose write never finished.
    lines.pop();
    return lines.map((line, index) => {
      try {
        return JSON.parse(line) as RunEvent;
      } catch (cause) {
        throw new StoreError(`${path} line ${index + 1} is corrupted`, { cause });
      }
    });
  }

  /**
   * A `<runId>.lock` file created exclusively, holding this process's pid. A lock whose process is
   * gone (a crash, `kill -9`) is stale and taken over.
   */
  async lock(runId: string): Promise<() => Promise<void>> {
    const path = `${this.pathOf(runId).slice(0, -".jsonl".length)}.lock`;
    try {
      await mkdir(this.directory, { recursive: true });
    } catch (cause) {
      throw new StoreError(`Cannot create ${this.directory}: ${(cause as Error).message}`, {
        cause,
      });
    }
    for (let tries = 0; tries < 3; tries++) {
      try {
        const handle = await open(path, "wx");
        try {
          await handle.writeFile(JSON.stringify({ pid: process.pid }));
        } finally {
          await handle.close();
        }
        return () => rm(path, { force: true });
      } catch (cause) {
        if ((cause as NodeJS.ErrnoException).code !== "EEXIST") {
          throw new StoreError(`Cannot create ${path}: ${(cause as Error).message}`, { cause });
        }
      }
      const holder = await readHolder(path);
      if (holder !== undefined && isAlive(holder)) {
        throw new StoreError(`Run "${runId}" is in use by process ${holder} (${path}).`);
      }
      await rm(path, { force: true });
    }
    throw new StoreError(`Could not lock run "${runId}" (${path}).`);
  }

  private pathOf(runId: string): string {
    if (!safeRunId.test(runId))
      throw new StoreError(`Not a usable run id for a file name: "${runId}"`);
    return join(this.directory, `${runId}.jsonl`);
  }
}

async function readHolder(path: string): Promise<number | undefined> {
  try {
    const { pid } = JSON.parse(await readFile(path, "utf8")) as { pid?: unknown };
    return typeof pid === "number" ? pid : undefined;
  } catch {
    // A lock file torn by a crash while it was written holds no live claim.
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
