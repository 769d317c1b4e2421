// The timeline: a row per sub-task, its attempts as bars on the run's time axis, so a person sees
// where the time went and what ran in parallel.
import type {
  AcceptanceMarkView,
  GateRunView,
  ProviderWaitView,
  TimelineRowView,
  TimelineView,
} from "../view.js";
import { duration, fitText, h, s } from "./dom.js";

const labelWidth = 220;
const plotWidth = 760;
const rowHeight = 24;
const axisHeight = 22;

type Bar = TimelineRowView["attempts"][number];

/** How a bar is coloured: complete, incomplete, error, cancelled, or still running. */
export function barKind(bar: Bar): string {
  if (bar.end === undefined) return "running";
  if (bar.completed === true) return "complete";
  if (bar.outcome === "cancelled") return "cancelled";
  // Its provider refused work: weather, not a failure of the agent's.
  if (bar.outcome === "rate-limited") return "rate-limited";
  if (bar.outcome === "error" || bar.outcome === "timeout") return "error";
  return "incomplete";
}

export function timelineView(view: TimelineView): HTMLElement {
  const span = Math.max(1, view.end - view.start);
  const x = (t: number) =>
    labelWidth + ((Math.min(Math.max(t, view.start), view.end) - view.start) / span) * plotWidth;
  const gate = view.gate ?? [];
  const acceptance = view.acceptance ?? [];
  const waits = waitsByKey(view.waits ?? []);
  const extraRows = (gate.length > 0 ? 1 : 0) + (acceptance.length > 0 ? 1 : 0) + waits.length;
  const height = axisHeight + (view.rows.length + extraRows) * rowHeight + 6;
  const svg = s("svg", {
    width: labelWidth + plotWidth + 12,
    height,
    role: "img",
    id: "timeline-svg",
  });
  for (let i = 0; i <= 4; i++) {
    const tx = labelWidth + (i / 4) * plotWidth;
    svg.append(s("line", { x1: tx, x2: tx, y1: axisHeight - 4, y2: height, class: "tick" }));
    const label = s("text", {
      x: tx,
      y: 13,
      class: "tick-label",
      "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle",
    });
    label.textContent = duration((i / 4) * span);
    svg.append(label);
  }
  const titles: [SVGTextContentElement, string][] = [];
  view.rows.forEach((row, i) => {
    const y = axisHeight + i * rowHeight;
    const group = s("g", { class: "row", "data-id": row.id, "data-status": row.status });
    const label = s("text", { x: 4, y: y + 16, class: "row-label" }) as SVGTextContentElement;
    const full = s("title");
    full.textContent = `${row.id}: ${row.title} (${row.status})`;
    group.append(full, label);
    titles.push([label, row.title]);
    if (row.readyAt !== undefined && row.readyAt > view.start) {
      const wait = s("line", {
        x1: x(view.start),
        x2: x(row.readyAt),
        y1: y + 12,
        y2: y + 12,
        class: "wait-deps",
      });
      const why = s("title");
      why.textContent = `waiting for ${row.dependsOn.join(", ")}: ${duration(row.readyAt - view.start)}`;
      wait.append(why);
      group.append(wait);
    }
    let model: string | undefined;
    for (const bar of row.attempts) {
      const end = bar.end ?? view.end;
      const left = x(bar.start);
      const escalated = bar.attempt > 1 && bar.agentModel !== model;
      model = bar.agentModel;
      const rect = s("rect", {
        x: left,
        y: y + 4,
        width: Math.max(2, x(end) - left),
        height: rowHeight - 8,
        rx: 2,
        class: `bar ${barKind(bar)}${escalated ? " escalated" : ""}`,
        "data-attempt": bar.attempt,
      });
      const tip = s("title");
      tip.textContent =
        `Attempt ${bar.attempt}: ${bar.outcome ?? "running"}` +
        (bar.completed === undefined ? "" : bar.completed ? ", judged complete" : ", incomplete") +
        `, ${duration(end - bar.start)}` +
        (bar.agentModel ? ` · agent model ${bar.agentModel}` : "") +
        (escalated ? " (escalated)" : "") +
        (bar.waitedForWorkerMs ? ` · waited ${duration(bar.waitedForWorkerMs)} for a worker` : "");
      rect.append(tip);
      group.append(rect);
      if (bar.waitedForWorkerMs) {
        const waited = s("rect", {
          x: left,
          y: y + 4,
          width: Math.max(1, x(bar.start + bar.waitedForWorkerMs) - left),
          height: rowHeight - 8,
          class: "wait-worker",
        });
        const whyWait = s("title");
        whyWait.textContent = `waiting for a worker: ${duration(bar.waitedForWorkerMs)}`;
        waited.append(whyWait);
        group.append(waited);
      }
    }
    svg.append(group);
  });
  let y = axisHeight + view.rows.length * rowHeight;
  if (gate.length > 0) {
    svg.append(gateRow(gate, y, x));
    y += rowHeight;
  }
  if (acceptance.length > 0) {
    svg.append(acceptanceRow(acceptance, y, x));
    y += rowHeight;
  }
  for (const [key, list] of waits) {
    svg.append(waitsRow(key, list, y, x, view.end));
    y += rowHeight;
  }
  const box = h("div", { id: "timeline" }, svg);
  // Labels are cut to their column once drawn, when their width can be measured.
  requestAnimationFrame(() => {
    for (const [label, text] of titles) fitText(label, text, labelWidth - 12);
  });
  return box;
}

/** A row of the run as a whole: its label, and a tooltip saying what it is. */
function runRow(id: string, label: string, about: string, y: number): SVGElement {
  const group = s("g", { class: "row run-row", "data-id": id });
  const title = s("title");
  title.textContent = about;
  const text = s("text", { x: 4, y: y + 16, class: "row-label" });
  text.textContent = label;
  group.append(title, text);
  return group;
}

/** The integration gate's runs as bars: passed or failed, what each checked and what failed. */
export function gateRow(runs: GateRunView[], y: number, x: (t: number) => number): SVGElement {
  const group = runRow(
    "integration",
    "Integration gate",
    "The integration gate: the merged result's checks before work lands on the run's branch",
    y,
  );
  for (const run of runs) {
    const left = x(run.start);
    const rect = s("rect", {
      x: left,
      y: y + 4,
      width: Math.max(3, x(run.end) - left),
      height: rowHeight - 8,
      rx: 2,
      class: `bar gate ${run.passed ? "complete" : "incomplete"}${run.final ? " final" : ""}`,
    });
    const tip = s("title");
    tip.textContent = gateText(run);
    rect.append(tip);
    group.append(rect);
  }
  return group;
}

export function gateText(run: GateRunView): string {
  const what = run.final ? "The final result" : `${run.parts.join(", ")} merged`;
  const verdict = run.passed ? "passed" : `failed ${run.failed.join(", ")}`;
  return `${what}: ${verdict}, ${duration(run.end - run.start)}`;
}

/** The acceptance's verdicts as marks where each was given. */
export function acceptanceRow(
  marks: AcceptanceMarkView[],
  y: number,
  x: (t: number) => number,
): SVGElement {
  const group = runRow(
    "acceptance",
    "Acceptance",
    "The acceptance: the request judged as a whole once every sub-task was done",
    y,
  );
  for (const mark of marks) {
    const kind =
      mark.verdict === "satisfied"
        ? "complete"
        : mark.verdict === "unsatisfied"
          ? "incomplete"
          : "cancelled";
    const rect = s("rect", {
      x: x(mark.at) - 3,
      y: y + 4,
      width: 6,
      height: rowHeight - 8,
      rx: 2,
      class: `bar acceptance ${kind}`,
      "data-round": mark.round,
    });
    const tip = s("title");
    tip.textContent = acceptanceText(mark);
    rect.append(tip);
    group.append(rect);
  }
  return group;
}

export function acceptanceText(mark: AcceptanceMarkView): string {
  const head = `Acceptance, round ${mark.round}: ${mark.verdict}`;
  if (mark.verdict === "unsatisfied") return `${head}; missing ${mark.missing.join("; ")}`;
  if (mark.verdict === "unavailable" && mark.reason) return `${head} (${mark.reason})`;
  return head;
}

/** A provider's refusals grouped by governor key, in the order each key first met one. */
function waitsByKey(waits: ProviderWaitView[]): [string, ProviderWaitView[]][] {
  const byKey = new Map<string, ProviderWaitView[]>();
  for (const wait of waits) byKey.set(wait.key, [...(byKey.get(wait.key) ?? []), wait]);
  return [...byKey];
}

/**
 * A row a provider that refused work: each pause a bar from when it was met to its end (lanes
 * limited in one pause overlap), a refusal for good a mark.
 */
export function waitsRow(
  key: string,
  waits: ProviderWaitView[],
  y: number,
  x: (t: number) => number,
  end: number,
): SVGElement {
  const provider = waits[0]?.provider ?? key;
  const group = runRow(
    `waits:${key}`,
    `Waits: ${key === "agent" ? provider : key}`,
    `Starts toward ${key} waited for ${provider}: its rate limits, overload or quota`,
    y,
  );
  for (const wait of waits) {
    const left = x(wait.at);
    const exhausted = wait.until === undefined;
    const rect = s("rect", {
      x: exhausted ? left - 3 : left,
      y: y + 4,
      width: exhausted ? 6 : Math.max(3, x(Math.min(wait.until!, end)) - left),
      height: rowHeight - 8,
      rx: 2,
      class: `bar provider-wait ${exhausted ? "error" : "rate-limited"}`,
      "data-who": wait.subTaskId ?? "manager",
    });
    const tip = s("title");
    tip.textContent = waitText(wait);
    rect.append(tip);
    group.append(rect);
  }
  return group;
}

/** `openai rate-limit 429 · a, attempt 1 · waited 12s: Rate limit reached`, or why it gave up. */
export function waitText(wait: ProviderWaitView): string {
  const who =
    wait.subTaskId === undefined
      ? "the manager's call"
      : `${wait.subTaskId}${wait.attempt === undefined ? "" : `, attempt ${wait.attempt}`}`;
  const head = `${wait.provider} ${wait.kind}${wait.statusCode === undefined ? "" : ` ${wait.statusCode}`} · ${who}`;
  if (wait.until === undefined)
    return `${head} · ${wait.kind === "quota" ? `quota exhausted: ${wait.message}` : (wait.reason ?? wait.message)}`;
  return `${head} · waited ${duration(wait.until - wait.at)}: ${wait.message}`;
}
