import type { RunEvent } from "@taskledger/core";
import spinners from "cli-spinners";
import { createLogUpdate } from "log-update";
import type { Colors } from "picocolors/types.js";
import { eventLines } from "./event-lines.js";
import { applyEvent, createProgressState, type ProgressState } from "./progress-state.js";
import { waitingText } from "./provider-limit-lines.js";
import { formatDuration } from "./terminal-text.js";

export interface Reporter {
  readonly state: ProgressState;
  onEvent(event: RunEvent): void;
  /** Stops any live rendering and leaves the terminal clean. */
  stop(): void;
  /** Holds live rendering while a person answers a prompt; `resume` starts it again. */
  pause(): void;
  resume(): void;
  /** Runs `write`, which prints outside the view (a warning on stderr), without tearing the live frame. */
  aside(write: () => void): void;
}

interface Output {
  write(text: string): unknown;
}

/** One line an event, for pipes, CI logs and `--json` runs (written to stderr there). */
export function createLineReporter(out: Output, c: Colors, now = Date.now): Reporter {
  const state = createProgressState();
  return {
    state,
    onEvent(event) {
      applyEvent(state, event, now());
      for (const line of eventLines(event, state, c)) out.write(`${line}\n`);
    },
    stop() {},
    pause() {},
    resume() {},
    aside(write) {
      write();
    },
  };
}

/**
 * A live view for terminals: finished steps scroll up as lines, running steps stay at the bottom
 * with a spinner, elapsed time and what the agent is doing. Rendering is done by log-update.
 */
export function createTtyReporter(stream: NodeJS.WriteStream, c: Colors, now = Date.now): Reporter {
  const state = createProgressState();
  const log = createLogUpdate(stream);
  const spinner = spinners.dots;
  let frame = 0;
  const render = () => {
    frame = (frame + 1) % spinner.frames.length;
    log(liveFrame(state, spinner.frames[frame]!, now(), c));
  };
  let timer: NodeJS.Timeout | undefined;
  let paused = false;
  const start = () => {
    timer = setInterval(render, spinner.interval);
    timer.unref();
  };
  start();
  return {
    state,
    onEvent(event) {
      applyEvent(state, event, now());
      // Starts are shown live; everything else scrolls up.
      const lines = event.type === "sub-task-started" ? [] : eventLines(event, state, c);
      if (paused) {
        if (lines.length > 0) stream.write(`${lines.join("\n")}\n`);
        return;
      }
      if (lines.length > 0) log.persist(lines.join("\n"));
      render();
    },
    stop() {
      clearInterval(timer);
      log.clear();
      log.done();
    },
    pause() {
      paused = true;
      clearInterval(timer);
      log.clear();
    },
    resume() {
      paused = false;
      start();
    },
    aside(write) {
      if (paused) return write();
      log.clear();
      write();
      render();
    },
  };
}

/** The bottom of the screen while a run goes on: one line a running sub-task. */
export function liveFrame(state: ProgressState, spin: string, now: number, c: Colors): string {
  const running = state.subTasks.filter((s) => s.status === "running");
  const total = state.subTasks.length;
  const done = state.subTasks.filter((s) => s.status === "completed").length;
  const lines = running.map((s) => {
    const elapsed = s.startedAt === undefined ? "" : formatDuration(now - s.startedAt);
    const attempt = s.attempt > 1 ? ` · attempt ${s.attempt}` : "";
    // A sub-task waiting for its provider says so: its last activity belongs to the refused attempt.
    const waiting = waitingText(state.limits.waiting.get(s.id), now);
    const activity = waiting
      ? c.yellow(` · ${waiting}`)
      : s.activity
        ? c.dim(` · ${s.activity}`)
        : "";
    return `${c.cyan(spin)} Step ${s.index}/${total}: ${s.title} ${c.dim(`${elapsed}${attempt}`)}${activity}`;
  });
  const manager = waitingText(state.limits.manager, now);
  if (manager) lines.push(c.yellow(`⏸ The manager's call is ${manager}`));
  if (!state.planned) lines.push(`${c.cyan(spin)} Planning…`);
  else lines.push(c.dim(`${done}/${total} done`));
  return lines.join("\n");
}
