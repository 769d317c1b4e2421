import { type FileHandle, open, readFile, rm } from "node:fs/promises";
import { join, resolve } from "node:path";
import { currentProcess, isHolderAlive, type ProcessIdentity } from "@taskledger/process/lifetime";
import { StoreError } from "../errors/errors.js";
import type { RunEvent } from "../log/run-events.js";
import { ensureDirectory } from "./ensure-directory.js";
import type { RunStore } from "./run-store.js";

const safeRunId = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * One append-only JSON-lines file per run in a directory. Each record is written and flushed to
 * disk before `append` resolves; a torn last line left by a crash is ignored when read back, and
 * cut off before the first append of this store to that run, so later records start on a line.
 */
export class FileRunStore implements RunStore {
  readonly #mended = new Set<string>();
  #directoryMade: Promise<void> | undefined;

  /** Absolute (resolved at construction), so its errors name the directory the same from anywhere. */
  readonly directory: string;

  constructor(directory: string) {
    this.directory = resolve(directory);
  }

  async append(runId: string, record: RunEvent): Promise<void> {
    const path = this.pathOf(runId);
    await this.#ensureDirectory();
    try {
      const handle = await open(path, "a+");
      try {
        if (!this.#mended.has(runId)) {
          await cutTornLine(handle);
          this.#mended.add(runId);
        }
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
   * A `<runId>.lock` file created exclusively, holding this process's pid and start time. A lock
   * whose process is gone (a crash, `kill -9`), or whose pid now names a process that started at
   * another time (a container restarted: pid 1 again), is stale and taken over.
   */
  async lock(runId: string): Promise<() => Promise<void>> {
    const path = `${this.pathOf(runId).slice(0, -".jsonl".length)}.lock`;
    await this.#ensureDirectory();
    for (let tries = 0; tries < 3; tries++) {
      try {
        const handle = await open(path, "wx");
        try {
          await handle.writeFile(JSON.stringify(currentProcess()));
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
      if (holder !== undefined && isHolderAlive(holder)) {
        throw new StoreError(`Run "${runId}" is in use by process ${holder.pid} (${path}).`);
      }
      await rm(path, { force: true });
    }
    throw new StoreError(`Could not lock run "${runId}" (${path}).`);
  }

  #ensureDirectory(): Promise<void> {
    this.#directoryMade ??= ensureDirectory(this.directory).catch((cause: unknown) => {
      this.#directoryMade = undefined;
      throw new StoreError(`Cannot create ${this.directory}: ${(cause as Error).message}`, {
        cause,
      });
    });
    return this.#directoryMade;
  }

  private pathOf(runId: string): string {
    if (!safeRunId.test(runId))
      throw new StoreError(`Not a usable run id for a file name: "${runId}"`);
    return join(this.directory, `${runId}.jsonl`);
  }
}

/** Truncates what follows the last newline: a record whose write a crash cut short. */
async function cutTornLine(handle: FileHandle): Promise<void> {
  const { size } = await handle.stat();
  const chunk = Buffer.alloc(64 * 1024);
  for (let end = size; end > 0; ) {
    const start = Math.max(0, end - chunk.length);
    const { bytesRead } = await handle.read(chunk, 0, end - start, start);
    const newline = chunk.subarray(0, bytesRead).lastIndexOf(10);
    if (newline >= 0) {
      if (start + newline + 1 < size) await handle.truncate(start + newline + 1);
      return;
    }
    end = start;
  }
  if (size > 0) await handle.truncate(0);
}

async function readHolder(path: string): Promise<ProcessIdentity | undefined> {
  try {
    const { pid, startTime } = JSON.parse(await readFile(path, "utf8")) as ProcessIdentity;
    if (typeof pid !== "number") return undefined;
    // A lock written before start times were recorded is judged by its pid alone.
    return { pid, ...(typeof startTime === "string" ? { startTime } : {}) };
  } catch {
    // A lock file torn by a crash while it was written holds no live claim.
    return undefined;
  }
}
