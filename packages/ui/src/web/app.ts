// The page: plain DOM. Everything a model or an agent wrote goes in as textContent, never as HTML.
import { Graph, layout } from "@dagrejs/dagre";
import type {
  NodeView,
  ReviewView,
  RunListView,
  RunSummaryView,
  RunView,
  StreamMessage,
  SubTaskDetailView,
  TimelineView,
} from "../view.js";
import { detailView } from "./detail-view.js";
import {
  ApiError,
  api,
  badge,
  cost,
  duration,
  fitText,
  h,
  post,
  runPath,
  s,
  token,
  tokens,
} from "./dom.js";
import { timelineView } from "./timeline-view.js";

const main = document.getElementById("main") as HTMLElement;
const connection = document.getElementById("connection") as HTMLElement;
const nodeWidth = 220;
const nodeHeight = 66;
// The run list is read again this often while it is shown.
const listEveryMs = 1000;

let closeStream: (() => void) | undefined;

function route(): void {
  closeStream?.();
  closeStream = undefined;
  connection.textContent = "";
  const match = /^#\/runs\/(.+)$/.exec(location.hash);
  if (match) void showRun(decodeURIComponent(match[1] ?? ""));
  else void showList();
}

/** The run list, read again every second while shown: runs appear, and change status, live. */
async function showList(): Promise<void> {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  closeStream = () => {
    stopped = true;
    clearTimeout(timer);
  };
  let first = true;
  const refresh = async () => {
    let list: RunListView;
    try {
      list = await api<RunListView>("/api/runs");
    } catch (error) {
      if (stopped) return;
      if (first) main.replaceChildren(h("p", { class: "error" }, String((error as Error).message)));
      connection.textContent = "reconnecting…";
      timer = setTimeout(() => void refresh(), listEveryMs);
      return;
    }
    if (stopped) return;
    if (first && list.live && location.hash === "") {
      location.hash = `#/runs/${encodeURIComponent(list.live)}`;
      return;
    }
    first = false;
    connection.textContent = "live";
    drawList(list);
    timer = setTimeout(() => void refresh(), listEveryMs);
  };
  await refresh();
}

function drawList(list: RunListView): void {
  const rows = list.runs.map((run) => runRow(run));
  main.replaceChildren(
    h("h1", {}, "Runs"),
    list.runs.length === 0
      ? h("p", { class: "muted" }, "No runs in this store yet.")
      : h(
          "table",
          { id: "runs" },
          h(
            "thead",
            {},
            h(
              "tr",
              {},
              ...["Request", "Status", "Started", "Duration", "Done", "Tokens", "Cost"].map((t) =>
                h("th", {}, t),
              ),
            ),
          ),
          h("tbody", {}, ...rows),
        ),
    list.omitted > 0 ? h("p", { class: "muted" }, `${list.omitted} older runs not listed.`) : "",
  );
}

function runRow(run: RunSummaryView): HTMLElement {
  const link = h(
    "a",
    { href: `#/runs/${encodeURIComponent(run.runId)}` },
    run.request || run.runId,
  );
  return h(
    "tr",
    { "data-run": run.runId },
    h("td", { class: "request" }, link, run.error ? h("div", { class: "error" }, run.error) : null),
    h("td", {}, badge(run.status)),
    h("td", {}, run.startedAt ? new Date(run.startedAt).toLocaleString() : ""),
    h("td", {}, duration(run.durationMs)),
    h("td", { class: "done" }, `${run.done}/${run.total}`),
    h("td", {}, tokens(run.tokens)),
    h("td", {}, cost(run.tokens)),
  );
}

/** The run page: header, review, graph and side panel, kept current by the event stream. */
async function showRun(runId: string): Promise<void> {
  let gone = false;
  closeStream = () => {
    gone = true;
  };
  try {
    await api(runPath(runId));
  } catch (error) {
    if (gone) return;
    const missing = error instanceof ApiError && error.status === 404;
    main.replaceChildren(
      h("p", { class: "crumbs" }, h("a", { href: "#/" }, "← all runs")),
      h(
        "p",
        { class: "error", id: "no-run" },
        missing ? `No such run: ${runId}` : String((error as Error).message),
      ),
    );
    connection.textContent = "";
    return;
  }
  if (gone) return;
  const header = h("section", { id: "run-header" });
  const review = h("section", { id: "review-slot" });
  const graph = h("div", { id: "graph" });
  const timeline = h("div", { id: "timeline-slot", hidden: "" });
  const panel = h("aside", { id: "detail" }, h("p", { class: "muted" }, "Select a sub-task."));
  const graphTab = h("button", { type: "button", id: "show-graph", class: "tab active" }, "Graph");
  const timelineTab = h(
    "button",
    { type: "button", id: "show-timeline", class: "tab" },
    "Timeline",
  );
  const tabs = h("div", { class: "tabs", role: "tablist" }, graphTab, timelineTab);
  main.replaceChildren(
    header,
    review,
    tabs,
    h("div", { class: "run-body" }, h("div", { class: "views" }, graph, timeline), panel),
  );
  let showing: "graph" | "timeline" = "graph";
  let timelineDue: ReturnType<typeof setTimeout> | undefined;
  const drawTimeline = async () => {
    timelineDue = undefined;
    if (showing !== "timeline") return;
    try {
      const view = await api<TimelineView>(`${runPath(runId)}/timeline`);
      if (showing === "timeline") timeline.replaceChildren(timelineView(view));
    } catch (error) {
      timeline.replaceChildren(h("p", { class: "error" }, String((error as Error).message)));
    }
  };
  // Read again after changes, at most twice a second.
  const timelineChanged = () => {
    if (showing === "timeline" && timelineDue === undefined)
      timelineDue = setTimeout(() => void drawTimeline(), 500);
  };
  const show = (which: "graph" | "timeline") => {
    showing = which;
    graphTab.classList.toggle("active", which === "graph");
    timelineTab.classList.toggle("active", which === "timeline");
    graph.toggleAttribute("hidden", which !== "graph");
    timeline.toggleAttribute("hidden", which !== "timeline");
    if (which === "timeline") void drawTimeline();
  };
  graphTab.addEventListener("click", () => show("graph"));
  timelineTab.addEventListener("click", () => show("timeline"));
  const nodes = new Map<string, NodeView>();
  const elements = new Map<string, SVGElement>();
  let selected: string | undefined;
  let current: RunView | undefined;
  let reviewId: string | undefined;

  const select = async (id: string) => {
    selected = id;
    for (const [nodeId, element] of elements)
      element.classList.toggle("selected", nodeId === selected);
    try {
      const detail = await api<SubTaskDetailView>(
        `${runPath(runId)}/sub-tasks/${encodeURIComponent(id)}`,
      );
      if (selected === id) panel.replaceChildren(...detailView(detail, runId));
    } catch (error) {
      panel.replaceChildren(h("p", { class: "error" }, String((error as Error).message)));
    }
  };

  const drawGraph = () => {
    const g = new Graph();
    g.setGraph({ rankdir: "LR", nodesep: 18, ranksep: 56, marginx: 12, marginy: 12 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const node of nodes.values()) g.setNode(node.id, { width: nodeWidth, height: nodeHeight });
    for (const node of nodes.values())
      for (const dep of node.dependsOn) if (nodes.has(dep)) g.setEdge(dep, node.id);
    layout(g);
    const size = g.graph();
    const svg = s("svg", {
      width: Math.ceil(size.width ?? 0),
      height: Math.ceil(size.height ?? 0),
      role: "img",
    });
    const defs = s("defs");
    const marker = s("marker", {
      id: "arrow",
      viewBox: "0 0 10 10",
      refX: 9,
      refY: 5,
      markerWidth: 7,
      markerHeight: 7,
      orient: "auto-start-reverse",
    });
    marker.append(s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }));
    defs.append(marker);
    svg.append(defs);
    for (const edge of g.edges()) {
      const points: { x: number; y: number }[] = g.edge(edge).points ?? [];
      const d = points.map((p, i) => `${i === 0 ? "M" : "L"} ${p.x} ${p.y}`).join(" ");
      svg.append(s("path", { d, class: "edge", "marker-end": "url(#arrow)" }));
    }
    elements.clear();
    for (const node of nodes.values()) {
      const box = g.node(node.id);
      const group = s("g", {
        class: "node",
        transform: `translate(${box.x - nodeWidth / 2}, ${box.y - nodeHeight / 2})`,
        tabindex: 0,
        "data-id": node.id,
      });
      group.append(s("rect", { width: nodeWidth, height: nodeHeight, rx: 6 }));
      const title = s("text", { x: 10, y: 21, class: "title" });
      const sub = s("text", { x: 10, y: 39, class: "sub" });
      const activity = s("text", { x: 10, y: 56, class: "activity" });
      const tooltip = s("title");
      tooltip.textContent = `${node.id}: ${node.title}`;
      group.append(tooltip, title, sub, activity);
      group.addEventListener("click", () => void select(node.id));
      group.addEventListener("keydown", (event) => {
        if ((event as KeyboardEvent).key === "Enter") void select(node.id);
      });
      elements.set(node.id, group);
      paint(node);
      svg.append(group);
    }
    graph.replaceChildren(svg);
    // Titles are cut to their box by width once drawn (measured), the whole title on hover.
    for (const node of nodes.values()) {
      const title = elements.get(node.id)?.querySelector("text.title");
      if (title) fitText(title as SVGTextContentElement, node.title, nodeWidth - 20);
    }
    if (selected) for (const [id, el] of elements) el.classList.toggle("selected", id === selected);
  };

  const paint = (node: NodeView) => {
    const group = elements.get(node.id);
    if (!group) return;
    group.setAttribute("data-status", node.status);
    const sub = group.querySelector("text.sub");
    if (sub) {
      const attempts = node.attempts ? ` · attempt ${node.attempts}` : "";
      sub.textContent = `${node.id.length > 14 ? `${node.id.slice(0, 13)}…` : node.id} · ${node.status}${attempts}`;
    }
    const activity = group.querySelector("text.activity");
    if (activity) {
      if (activity.isConnected)
        fitText(activity as SVGTextContentElement, node.activity, nodeWidth - 20);
      else activity.textContent = node.activity;
    }
  };

  // Cancelling stops running attempts, so it is asked twice; the question outlives redraws.
  let cancelStep: "button" | "asking" | "sent" | { error: string } = "button";
  const cancelControl = (): HTMLElement => {
    if (cancelStep === "sent")
      return h("span", { class: "muted", id: "cancel-sent" }, "Cancelling…");
    if (typeof cancelStep === "object") return h("span", { class: "error" }, cancelStep.error);
    if (cancelStep === "button") {
      const button = h("button", { id: "cancel", class: "danger" }, "Cancel run");
      button.addEventListener("click", () => {
        cancelStep = "asking";
        button.replaceWith(cancelControl());
      });
      return button;
    }
    const yes = h("button", { id: "cancel-confirm", class: "danger" }, "Yes, cancel the run");
    const no = h("button", { id: "cancel-keep" }, "Keep it running");
    const ask = h(
      "span",
      { id: "cancel-ask", class: "confirm" },
      "Cancel this run? Its running attempts are stopped. ",
      yes,
      " ",
      no,
    );
    no.addEventListener("click", () => {
      cancelStep = "button";
      ask.replaceWith(cancelControl());
    });
    yes.addEventListener("click", async () => {
      yes.setAttribute("disabled", "");
      const answer = await post(`${runPath(runId)}/cancel`, {});
      cancelStep = answer.ok ? "sent" : { error: answer.error ?? "failed" };
      document.getElementById("cancel-ask")?.replaceWith(cancelControl());
    });
    return ask;
  };

  const drawHeader = (run: RunView, summary: RunSummaryView) => {
    const final = ["completed", "partial", "failed", "cancelled", "stopped"].includes(
      summary.status,
    );
    const cancel = run.live && !final ? cancelControl() : null;
    header.replaceChildren(
      h("p", { class: "crumbs" }, h("a", { href: "#/" }, "← all runs"), ` · ${runId}`),
      h("pre", { class: "request-text" }, run.request),
      h(
        "div",
        { class: "facts" },
        h("span", { id: "run-status" }, badge(summary.status)),
        h("span", {}, `${summary.done}/${summary.total} done`),
        h("span", { id: "counts", class: "muted" }, statusCounts(nodes.values())),
        h("span", {}, duration(summary.durationMs)),
        h("span", {}, tokens(summary.tokens)),
        cost(summary.tokens),
        run.models.manager ? h("span", { class: "muted" }, `manager ${run.models.manager}`) : null,
        run.models.agent ? h("span", { class: "muted" }, `agent ${run.models.agent}`) : null,
        cancel,
      ),
      run.failure ? h("p", { class: "error" }, run.failure) : "",
      summary.error ? h("p", { class: "error" }, summary.error) : "",
      run.facts.length > 0
        ? h(
            "details",
            { class: "plan-facts", open: "" },
            h("summary", {}, `Facts the plan rests on (${run.facts.length})`),
            h("ul", {}, ...run.facts.map((f) => h("li", {}, h("b", {}, `${f.kind}: `), f.text))),
          )
        : "",
    );
  };

  const drawReview = (pending: ReviewView | undefined) => {
    if (pending?.id === reviewId) return;
    reviewId = pending?.id;
    if (!pending) {
      review.replaceChildren();
      return;
    }
    const editor = h("textarea", { id: "plan-json", spellcheck: "false", rows: "16" });
    (editor as HTMLTextAreaElement).value = JSON.stringify(pending.ledger, null, 2);
    const error = h("pre", { id: "review-error", class: "error", hidden: "" });
    const reason = h("input", { id: "reject-reason", placeholder: "why (optional)" });
    const send = async (body: Record<string, unknown>) => {
      const answer = await post(`${runPath(runId)}/review`, { id: pending.id, ...body });
      if (answer.ok) {
        // The run may have taken the answer (and the page said so) before this reply came.
        if (reviewId === pending.id)
          review.replaceChildren(h("p", { class: "muted", id: "review-sent" }, "Answer sent."));
        return;
      }
      error.textContent = answer.error ?? "refused";
      error.removeAttribute("hidden");
    };
    const approve = h("button", { id: "approve" }, "Approve");
    approve.addEventListener("click", () => void send({ action: "approve" }));
    const edit = h("button", { id: "apply-edit" }, "Run the edited plan");
    edit.addEventListener("click", () => {
      let ledger: unknown;
      try {
        ledger = JSON.parse((editor as HTMLTextAreaElement).value);
      } catch (e) {
        error.textContent = `Not JSON: ${(e as Error).message}`;
        error.removeAttribute("hidden");
        return;
      }
      void send({ action: "edit", ledger });
    });
    const reject = h("button", { id: "reject", class: "danger" }, "Reject");
    reject.addEventListener(
      "click",
      () => void send({ action: "reject", reason: (reason as HTMLInputElement).value }),
    );
    review.replaceChildren(
      h(
        "div",
        { id: "review", class: "review" },
        h(
          "h2",
          {},
          pending.kind === "plan" ? "The plan waits for your review" : "A replan waits for review",
        ),
        pending.kind === "replan"
          ? h(
              "p",
              {},
              `Replaces ${pending.replaced.join(", ")}`,
              pending.reason ? ` because: ${pending.reason}` : "",
            )
          : null,
        h(
          "p",
          { class: "muted" },
          "Approve it, edit the JSON and run that, or reject it. The terminal can answer too; the first answer wins.",
        ),
        editor,
        error,
        h("div", { class: "actions" }, approve, edit, reason, reject),
      ),
    );
  };

  const source = new EventSource(`${runPath(runId)}/events?token=${encodeURIComponent(token)}`);
  closeStream = () => {
    source.close();
    clearTimeout(timelineDue);
    showing = "graph";
  };
  const ended = () =>
    ["completed", "partial", "failed", "cancelled"].includes(current?.summary.status ?? "");
  // The top bar says what the page shows: a run that goes on changing, or one that has ended.
  const sayLive = () => {
    connection.textContent = ended() ? "run ended" : "live";
  };
  source.onopen = sayLive;
  source.onerror = () => {
    const over = ended();
    // A finished run's page stays as it was when its server stopped.
    if (over) source.close();
    connection.textContent = over ? "run ended" : "reconnecting…";
  };
  source.onmessage = (event) => {
    const message = JSON.parse(event.data as string) as StreamMessage;
    if (message.type === "snapshot") {
      current = message.run;
      nodes.clear();
      for (const node of message.run.nodes) nodes.set(node.id, node);
      drawHeader(message.run, message.run.summary);
      drawReview(message.run.review);
      drawGraph();
      timelineChanged();
      sayLive();
      if (selected && nodes.has(selected)) void select(selected);
      return;
    }
    if (!current) return;
    current.summary = message.summary;
    for (const node of message.nodes) {
      nodes.set(node.id, node);
      paint(node);
      if (node.id === selected) void select(node.id);
    }
    drawHeader(current, message.summary);
    drawReview(message.review);
    timelineChanged();
    sayLive();
  };
}

/** "117 completed · 1 failed · 82 skipped": where a large run stands at a glance. */
function statusCounts(nodes: Iterable<NodeView>): string {
  const counts = new Map<string, number>();
  for (const node of nodes) counts.set(node.status, (counts.get(node.status) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} ${status}`).join(" · ");
}

window.addEventListener("hashchange", route);
route();
