import { type FSWatcher, watch } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { isHolderAlive } from "@taskledger/core";
import { type LogChange, RunLog } from "./run-log.js";

const safeRunId = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
// Logs kept read in memory; past this, the least recently used one not being watched is dropped.
const maxCached = 50;
// A missed file-system notice costs at most this long: each tick reads only new bytes.
const tickMs = 1000;

type Subscriber = (change: LogChange) => void;

/**
 * The runs of a store directory: each log read once and then only its new bytes, followed by a
 * directory watcher (and a slow tick in case a notice is missed) while a page subscribes to it.
 */
export class RunCatalog {
  readonly #logs = new Map<string, RunLog>();
  readonly #subscribers = new Map<string, Set<Subscriber>>();
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;

  constructor(readonly directory: string) {}

  /** Run ids of the directory, newest first by the log's last change. */
  async runIds(): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.directory);
    } catch (cause) {
      if ((cause as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw cause;
    }
    const logs = names
      .filter((name) => name.endsWith(".jsonl"))
      .map((name) => name.slice(0, -".jsonl".length))
      .filter((id) => safeRunId.test(id));
    const times = await Promise.all(
      logs.map(async (id) => {
        try {
          return (await stat(this.#pathOf(id))).mtimeMs;
        } catch {
          return 0;
        }
      }),
    );
    return logs
      .map((id, i) => ({ id, time: times[i] ?? 0 }))
      .sort((a, b) => b.time - a.time || a.id.localeCompare(b.id))
      .map((entry) => entry.id);
  }

  /** The run's log, read up to its end; undefined for an id that names no log. */
  async get(runId: string): Promise<RunLog | undefined> {
    if (!safeRunId.test(runId)) return undefined;
    let log = this.#logs.get(runId);
    if (!log) {
      try {
        await stat(this.#pathOf(runId));
      } catch {
        return undefined;
      }
      log = new RunLog(this.#pathOf(runId), runId);
      this.#logs.set(runId, log);
      this.#evict();
    } else {
      // Most recently used last.
      this.#logs.delete(runId);
      this.#logs.set(runId, log);
    }
    await log.readMore();
    return log;
  }

  /** The log's size and time of last change, to tell whether it changed since it was read. */
  async stamp(runId: string): Promise<string | undefined> {
    try {
      const { size, mtimeMs } = await stat(this.#pathOf(runId));
      return `${size}:${mtimeMs}`;
    } catch {
      return undefined;
    }
  }

  /** True while a live process holds the run's lock (the file store's `<id>.lock`). */
  async isActive(runId: string): Promise<boolean> {
    try {
      const { pid, startTime } = JSON.parse(
        await readFile(join(this.directory, `${runId}.lock`), "utf8"),
      ) as { pid?: unknown; startTime?: unknown };
      if (typeof pid !== "number") return false;
      return isHolderAlive({ pid, ...(typeof startTime === "string" ? { startTime } : {}) });
    } catch {
      return false;
    }
  }

  /** Calls `subscriber` with what each new read of the run's log changed; returns the unsubscribe. */
  subscribe(runId: string, subscriber: Subscriber): () => void {
    let set = this.#subscribers.get(runId);
    if (!set) {
      set = new Set();
      this.#subscribers.set(runId, set);
    }
    set.add(subscriber);
    this.#startWatching();
    return () => {
      set.delete(subscriber);
      if (set.size === 0) this.#subscribers.delete(runId);
      if (this.#subscribers.size === 0) this.#stopWatching();
    };
  }

  /** Reads a watched run's new records now and tells its subscribers. */
  async poke(runId: string): Promise<void> {
    const subscribers = this.#subscribers.get(runId);
    const log = this.#logs.get(runId) ?? (subscribers ? await this.get(runId) : undefined);
    if (!log || !subscribers) return;
    let change: LogChange;
    try {
      change = await log.readMore();
    } catch {
      return;
    }
    for (const subscriber of subscribers) subscriber(change);
  }

  /** Reads every watched run's new records now. */
  async pokeAll(): Promise<void> {
    await Promise.all([...this.#subscribers.keys()].map((runId) => this.poke(runId)));
  }

  close(): void {
    this.#subscribers.clear();
    this.#stopWatching();
  }

  #startWatching(): void {
    if (this.#timer) return;
    this.#timer = setInterval(() => {
      for (const runId of this.#subscribers.keys()) void this.poke(runId);
    }, tickMs);
    this.#timer.unref();
    try {
      this.#watcher = watch(this.directory, { persistent: false }, (_type, name) => {
        const file = typeof name === "string" ? name : undefined;
        if (file?.endsWith(".jsonl")) void this.poke(file.slice(0, -".jsonl".length));
        else if (file?.endsWith(".lock")) void this.poke(file.slice(0, -".lock".length));
      });
      this.#watcher.on("error", () => this.#watcher?.close());
    } catch {
      // No watcher (a directory not made yet, a file system without notices): the tick reads.
      this.#watcher = undefined;
    }
  }

  #stopWatching(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  #evict(): void {
    for (const runId of this.#logs.keys()) {
      if (this.#logs.size <= maxCached) return;
      if (!this.#subscribers.has(runId)) this.#logs.delete(runId);
    }
  }

  #pathOf(runId: string): string {
    return join(this.directory, `${runId}.jsonl`);
  }
}
