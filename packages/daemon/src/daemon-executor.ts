import { resolve } from "node:path";
import {
  type AttemptProcess,
  type AttemptResult,
  type ExecuteOptions,
  type Executor,
  type Sandbox,
  TaskLedgerError,
  type TaskLedgerErrorCode,
} from "@taskledger/core";
import {
  createOpencodeServerExecutor,
  lostAttemptResult,
  type OpencodeServerExecutor,
} from "@taskledger/executor";
import type { DaemonConnection } from "./client.js";
import type { DaemonExecutorSpec, DaemonSandboxSpec } from "./protocol.js";

/** The daemon a process's executors share, reached on first use; `undefined`: run in-process. */
export interface DaemonLink {
  connection(signal?: AbortSignal): Promise<DaemonConnection | undefined>;
  /** The settings a sandbox of this process was made from (the daemon makes the same). */
  sandboxSpec(sandbox: Sandbox): DaemonSandboxSpec | undefined;
}

/**
 * The opencode server executor, run by the per-user daemon so its servers (the rooms) outlive the
 * run: each attempt is sent there and its events and result come back. Where the daemon cannot
 * serve (none starts, a sandbox it cannot make), attempts run in this process as before.
 */
export class DaemonExecutor implements Executor {
  private local: OpencodeServerExecutor | undefined;
  private agentModels: readonly string[] = [];

  constructor(
    private readonly spec: DaemonExecutorSpec,
    private readonly link: DaemonLink,
    /** The in-process executor's extra option (pricing as a function). */
    private readonly pricing: Parameters<typeof createOpencodeServerExecutor>[0]["pricing"],
  ) {}

  async preflight(input: { agentModels: readonly string[]; abortSignal: AbortSignal }) {
    this.agentModels = [...input.agentModels];
    await this.inProcess().preflight(input);
  }

  warm(input: { count: number; abortSignal: AbortSignal; sandbox?: Sandbox }): void {
    const sandbox = input.sandbox ? this.link.sandboxSpec(input.sandbox) : undefined;
    if (input.sandbox !== undefined && sandbox === undefined) {
      this.inProcess().warm(input);
      return;
    }
    void this.link.connection(input.abortSignal).then(
      (connection) => {
        if (connection === undefined) this.inProcess().warm(input);
        else
          connection.send({
            type: "warm",
            spec: this.fullSpec(),
            ...(sandbox ? { sandbox } : {}),
            count: input.count,
          });
      },
      () => {},
    );
  }

  guard(process: AttemptProcess): () => void {
    return this.inProcess().guard(process);
  }

  async reclaim(processes: readonly AttemptProcess[]): Promise<void> {
    const connection = await this.link.connection().catch(() => undefined);
    if (connection !== undefined) {
      const asked = await connection
        .ask({ type: "reclaim", processes: [...processes] })
        .then(() => true)
        .catch(() => false);
      if (asked) return;
    }
    await this.inProcess().reclaim(processes);
  }

  async close(): Promise<void> {
    await this.local?.close();
  }

  async run(prompt: string, options: ExecuteOptions): Promise<AttemptResult> {
    const sandbox = options.sandbox ? this.link.sandboxSpec(options.sandbox) : undefined;
    if (options.sandbox !== undefined && sandbox === undefined) {
      return this.inProcess().run(prompt, options);
    }
    let connection: DaemonConnection | undefined;
    try {
      connection = await this.link.connection(options.abortSignal);
    } catch (error) {
      if (options.abortSignal.aborted) connection = undefined;
      else throw error;
    }
    if (connection === undefined) return this.inProcess().run(prompt, options);
    const started = performance.now();
    const model = options.agentModel ?? this.spec.options.model;
    const cwd = resolve(options.cwd);
    return await new Promise<AttemptResult>((resolveResult, reject) => {
      const onAbort = () => connection.send({ type: "abort", id: sent.id });
      const sent = connection.request(
        {
          type: "run",
          spec: this.fullSpec(),
          ...(sandbox ? { sandbox } : {}),
          prompt,
          attempt: {
            subTask: options.subTask,
            ...(options.runId === undefined ? {} : { runId: options.runId }),
            attempt: options.attempt,
            cwd,
            ...(options.agentModel === undefined ? {} : { agentModel: options.agentModel }),
            ...(options.readOnly === undefined ? {} : { readOnly: options.readOnly }),
            ...(options.candidate === undefined ? {} : { candidate: options.candidate }),
          },
        },
        (reply) => {
          if (reply === undefined) {
            finish();
            // The daemon died under the attempt: retried like a lost server's, in a new daemon.
            resolveResult(
              lostAttemptResult({
                cwd,
                model,
                started,
                reason: "the taskledger daemon running this attempt stopped (killed or replaced)",
                ...(options.readOnly ? { readOnly: true } : {}),
              }),
            );
            return;
          }
          if (reply.type === "event") safely(() => options.onEvent?.(reply.event));
          else if (reply.type === "process") safely(() => options.onProcess?.(reply.process));
          else if (reply.type === "result") {
            finish();
            resolveResult(reply.result);
          } else if (reply.type === "failed") {
            finish();
            // The same typed error the executor threw there (`isInstance` reads its code).
            const error =
              reply.code === undefined
                ? new Error(reply.message)
                : new TaskLedgerError(reply.code as TaskLedgerErrorCode, {
                    message: reply.message,
                    isRetryable: reply.retryable === true,
                  });
            error.name = reply.name;
            reject(error);
          }
        },
      );
      const finish = () => {
        sent.done();
        options.abortSignal.removeEventListener("abort", onAbort);
      };
      if (options.abortSignal.aborted) onAbort();
      else options.abortSignal.addEventListener("abort", onAbort, { once: true });
    });
  }

  private fullSpec(): DaemonExecutorSpec {
    const models = [...new Set([...(this.spec.options.agentModels ?? []), ...this.agentModels])];
    return {
      ...this.spec,
      options: { ...this.spec.options, ...(models.length > 0 ? { agentModels: models } : {}) },
    };
  }

  /** The same executor in this process: where the daemon cannot serve. */
  private inProcess(): OpencodeServerExecutor {
    this.local ??= createOpencodeServerExecutor({
      ...this.spec.options,
      ...(this.pricing ? { pricing: this.pricing } : {}),
    });
    return this.local;
  }
}

function safely(call: () => void): void {
  try {
    call();
  } catch {
    // A host listener's fault must not end the attempt.
  }
}
