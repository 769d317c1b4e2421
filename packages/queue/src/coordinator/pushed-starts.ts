/**
 * Start commits a coordinator already pushed to its remote, each with the ref that holds it there.
 * The attempts of a wave mostly start from the same commit: one push serves them all, and each job
 * names the ref that already holds it.
 */
export class PushedStarts {
  private readonly byCommit = new Map<string, Promise<string>>();
  private readonly byRef = new Map<string, string>();

  /**
   * The ref on the remote that holds `commit`: one pushed before (or being pushed now), else `ref`
   * once `push` put it there. A failed push is forgotten, so the next attempt pushes again.
   */
  refFor(commit: string, ref: string, push: () => Promise<void>): Promise<string> {
    const known = this.byCommit.get(commit);
    if (known) return known;
    // The ref moves to this commit: whatever it held is no longer there under it.
    const before = this.byRef.get(ref);
    if (before !== undefined) this.byCommit.delete(before);
    const pushed = push().then(() => ref);
    this.byCommit.set(commit, pushed);
    this.byRef.set(ref, commit);
    pushed.catch(() => {
      if (this.byCommit.get(commit) === pushed) this.byCommit.delete(commit);
    });
    // A long run's memory stays bounded; a forgotten commit is pushed again when next needed.
    if (this.byRef.size > 4096) {
      const [oldest, held] = this.byRef.entries().next().value as [string, string];
      this.byRef.delete(oldest);
      if (this.byCommit.get(held) !== pushed) this.byCommit.delete(held);
    }
    return pushed;
  }
}
