/**
 * Counts what keeps the host busy (runs, plans) and calls `release` once nothing has for
 * `idleMs`: the host then stops what it keeps warm between runs (the opencode servers, ~1 GB).
 */
export class IdleRelease {
  #holds = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    private readonly idleMs: number,
    private readonly release: () => Promise<void>,
    private readonly log: (line: string) => void,
  ) {}

  /** Something started; call what it returns once when it ended. */
  hold(): () => void {
    this.#holds++;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#holds--;
      if (this.#holds === 0 && !this.#closed) this.#arm();
    };
  }

  /** No release after this (the server closes and the host stops everything itself). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #arm(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.release().then(
        () =>
          this.log(
            `no run for ${Math.round(this.idleMs / 1000)} s: stopped the idle agent servers; the next run starts them again`,
          ),
        (error: unknown) => this.log(`releasing the idle agent servers failed: ${String(error)}`),
      );
    }, this.idleMs);
    // The connection keeps the process alive, not this timer.
    this.#timer.unref();
  }
}
