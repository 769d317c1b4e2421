// Electron main process: run taskledger there and talk to the renderer over IPC. The types below
// are the parts of Electron's `ipcMain` and `WebContents` this bridge uses, so the file has no
// Electron dependency; in an app pass `ipcMain` and `mainWindow.webContents` as they are. Give
// the manager a durable store (`new FileRunStore(app.getPath("userData") + "/runs")`) so a run
// that was waiting for the person's review when the app closed asks again after `resume`.
//
// Renderer → main                                   Main → renderer
//   invoke("taskledger:start", request) → runId       send("taskledger:review", { runId, kind, ledger, replaced?, reason?, problems? })
//   invoke("taskledger:resume", runId) → runId        send("taskledger:event", event)
//   send("taskledger:review-answer", runId, answer)   send("taskledger:report", { runId, report })
//   send("taskledger:cancel", runId)                  send("taskledger:error", { runId, code, message })
import type { Manager, PlanReviewDecision, ReviewPlan, RunEvent, TaskRun } from "@taskledger/core";
import { TaskLedgerError } from "@taskledger/core";

export interface IpcMainLike {
  handle(channel: string, listener: (event: unknown, ...args: unknown[]) => unknown): void;
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): void;
  removeHandler(channel: string): void;
  removeAllListeners(channel: string): void;
}

export interface WebContentsLike {
  send(channel: string, ...args: unknown[]): void;
  isDestroyed(): boolean;
}

interface LiveRun {
  controller: AbortController;
  /** Resolves the review the renderer is looking at (once; then there is none). */
  answer?: ((decision: PlanReviewDecision) => void) | undefined;
}

/** Wires the channels above; returns a function that removes them and cancels every run. */
export function registerTaskLedgerIpc(
  ipcMain: IpcMainLike,
  renderer: WebContentsLike,
  manager: Manager,
): () => void {
  const runs = new Map<string, LiveRun>();
  const send = (channel: string, payload: unknown) => {
    // A closed window must not crash the main process.
    if (!renderer.isDestroyed()) renderer.send(channel, payload);
  };

  /** The person answers in the renderer; the run waits (and is logged as waiting) meanwhile. */
  const reviewFor =
    (live: LiveRun): ReviewPlan =>
    (review) =>
      new Promise((resolve, reject) => {
        live.answer = resolve;
        review.abortSignal.addEventListener("abort", () => reject(review.abortSignal.reason), {
          once: true,
        });
        const { abortSignal: _signal, ...shown } = review;
        send("taskledger:review", shown);
      });

  const follow = (run: TaskRun, live: LiveRun) => {
    runs.set(run.runId, live);
    run.on("*", (event: RunEvent) => send("taskledger:event", event));
    run.result.then(
      (report) => send("taskledger:report", { runId: run.runId, report }),
      (error: unknown) =>
        send("taskledger:error", {
          runId: run.runId,
          code: TaskLedgerError.isInstance(error) ? error.code : "unknown",
          message: error instanceof Error ? error.message : String(error),
        }),
    );
    void run.result.finally(() => runs.delete(run.runId)).catch(() => {});
    return run.runId;
  };

  ipcMain.handle("taskledger:start", (_event, request) => {
    const live: LiveRun = { controller: new AbortController() };
    const run = manager.start(String(request), {
      abortSignal: live.controller.signal,
      reviewPlan: reviewFor(live),
    });
    return follow(run, live);
  });
  ipcMain.handle("taskledger:resume", (_event, runId) => {
    const live: LiveRun = { controller: new AbortController() };
    const run = manager.resume(String(runId), {
      abortSignal: live.controller.signal,
      reviewPlan: reviewFor(live),
    });
    return follow(run, live);
  });
  // The renderer's answer goes as sent: the manager checks it, and one that is no decision (or an
  // edit that does not validate) comes back as a new "taskledger:review" with its `problems`.
  ipcMain.on("taskledger:review-answer", (_event, runId, answer) => {
    const live = runs.get(String(runId));
    const resolve = live?.answer;
    if (live === undefined || resolve === undefined) return;
    live.answer = undefined;
    resolve(answer as PlanReviewDecision);
  });
  ipcMain.on("taskledger:cancel", (_event, runId) => runs.get(String(runId))?.controller.abort());

  return () => {
    for (const channel of ["taskledger:review-answer", "taskledger:cancel"])
      ipcMain.removeAllListeners(channel);
    ipcMain.removeHandler("taskledger:start");
    ipcMain.removeHandler("taskledger:resume");
    for (const run of runs.values()) run.controller.abort();
  };
}
