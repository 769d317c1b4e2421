// The queue (bullmq and ioredis: most of the command line's start-up time) is loaded only by a
// command that uses it; `taskledger --help`, a run without `--redis` and the daemon never do.
type QueueModule = typeof import("@taskledger/queue");

let loaded: QueueModule | undefined;

/** Loads the queue once: `parseRunOptions` does for a run with `--redis`, the worker at its start. */
export async function loadQueue(): Promise<QueueModule> {
  loaded ??= await import("@taskledger/queue");
  return loaded;
}

/** The queue `loadQueue` loaded, for the synchronous `createRuntime` of a run with `--redis`. */
export function loadedQueue(): QueueModule {
  if (loaded === undefined)
    throw new Error("the queue is not loaded: a run's options come from parseRunOptions");
  return loaded;
}
