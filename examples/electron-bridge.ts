// Electron main process: run taskledger there and talk to the renderer over IPC. The types below
// are the parts of Electron's `ipcMain` and `WebContents` this bridge uses, so the file has no
// Electron dependency; in an app pass `ipcMain` and `mainWindow.webContents` as they are.
//
// Renderer → main                               Main → renderer
//   invoke("taskledger:start", request) → runId   send("taskledger:plan", { runId, ledger })
//   send("taskledger:approve", runId, ledger?)     send("taskledger:event", event)
//   send("taskledger:reject", runId)               send("taskledger:report", report)
//   send("taskledger:cancel", runId)               send("taskledger:error", { runId, code, message })
import type { Manager, RunEvent, TaskLedger } from "@taskledger/core";
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

interface PendingRun {
  controller: AbortController;
  approve?: (ledger: TaskLedger | undefined) => void;
}

/** Wires the channels above; returns a function that removes them and cancels every run. */
export function registerTaskLedgerIpc(
  ipcMain: IpcMainLike,
  renderer: WebContentsLike,
  manager: Manager,
): () => void {
  const runs = new Map<string, PendingRun>();
  let next = 0;
  const send = (channel: string, payload: unknown) => {
    // A closed window must not crash the main process.
    if (!renderer.isDestroyed()) renderer.send(channel, payload);
  };

  ipcMain.handle("taskledger:start", async (_event, request) => {
    const runId = `ui-${++next}`;
    const pending: PendingRun = { controller: new AbortController() };
    runs.set(runId, pending);
    void drive(runId, String(request), pending).finally(() => runs.delete(runId));
    return runId;
  });
  ipcMain.on("taskledger:approve", (_event, runId, ledger) => {
    runs.get(String(runId))?.approve?.(ledger as TaskLedger | undefined);
  });
  ipcMain.on("taskledger:reject", (_event, runId) => runs.get(String(runId))?.controller.abort());
  ipcMain.on("taskledger:cancel", (_event, runId) => runs.get(String(runId))?.controller.abort());

  async function drive(runId: string, request: string, pending: PendingRun): Promise<void> {
    const { signal } = pending.controller;
    try {
      const plan = await manager.plan(request, { abortSignal: signal });
      send("taskledger:plan", { runId, ledger: plan.ledger });
      // Nothing runs until the person approves (possibly an edited plan) or rejects.
      const approved = await new Promise<TaskLedger | undefined>((resolve, reject) => {
        pending.approve = (edited) => resolve(edited ?? plan.ledger);
        signal.addEventListener("abort", () => reject(new Error("plan rejected")), { once: true });
      });
      const run = manager.start(request, { plan: approved, abortSignal: signal });
      run.on("*", (event: RunEvent) => send("taskledger:event", { ...event, uiRunId: runId }));
      send("taskledger:report", { runId, report: await run.result });
    } catch (error) {
      const code = TaskLedgerError.isInstance(error)
        ? error.code
        : signal.aborted
          ? "aborted"
          : "unknown";
      send("taskledger:error", {
        runId,
        code,
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }

  return () => {
    for (const channel of ["taskledger:approve", "taskledger:reject", "taskledger:cancel"]) {
      ipcMain.removeAllListeners(channel);
    }
    ipcMain.removeHandler("taskledger:start");
    for (const run of runs.values()) run.controller.abort();
  };
}
