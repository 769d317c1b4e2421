/**
 * Sub-tasks dispatched whose attempt has not reached the executor yet. A round's extra candidates
 * wait for the others' (siblings first, then candidates): where the executor's seats are few (one
 * opencode server per unit of concurrency), an extra candidate never takes the seat of a sibling
 * sub-task that was ready before it.
 */
export class DispatchGate {
  private readonly starting = new Set<string>();
  private waiters: (() => void)[] = [];

  /** Sub-task `id` was dispatched: its attempt is on its way to the executor. */
  dispatched(id: string): void {
    this.starting.add(id);
  }

  /** Sub-task `id`'s attempt reached the executor, or its job ended without one. */
  reached(id: string): void {
    if (!this.starting.delete(id)) return;
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves once no sub-task but `self` is on its way to the executor, or on abort. */
  async othersStarted(self: string, signal: AbortSignal): Promise<void> {
    const waiting = () => [...this.starting].some((id) => id !== self);
    while (waiting() && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener("abort", done);
          resolve();
        };
        this.waiters.push(done);
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }
}
