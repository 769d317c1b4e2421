/** What the command line reads and writes: the process's streams, or a test's. */
export interface CliIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** Aborted on Ctrl-C by the binary; tests abort it directly. */
  signal: AbortSignal;
}

export const exitCodes = { completed: 0, notCompleted: 1, usage: 2, cancelled: 130 } as const;
