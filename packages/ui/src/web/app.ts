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
} from "../view.js";
import { detailView } from "./detail-view.js";
import { api, badge, cost, duration, h, post, runPath, s, token, tokens } from "./dom.js";

const main = document.getElementById("main") as HTMLElement;
const connection = document.getElementById("connection") as HTMLElement;
const nodeWidth = 220;
const nodeHeight = 52;

let closeStream: (() => void) | undefined;

function route(): void {
  closeStream?.();
  closeStream = undefined;
  const match = /^#\/runs\/(.+)$/.exec(location.hash);
  if (match) void showRun(decodeURIComponent(match[1] ?? ""));
  else void showList();
}

async function showList(): Promise<void> {
  let list: RunListView;
  try {
    list = await api<RunListView>("/api/runs");
  } catch (error) {
    main.replaceChildren(h("p", { class: "error" }, String((error as Error).message)));
    return;
  }
  if (list.live && location.hash === "") {
    location.hash = `#/runs/${encodeURIComponent(list.live)}`;
    return;
  }
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
  const header = h("section", { id: "run-header" });
  const review = h("section", { id: "review-slot" });
  const graph = h("div", { id: "graph" });
  const panel = h("aside", { id: "detail" }, h("p", { class: "muted" }, "Select a sub-task."));
  main.replaceChildren(header, review, h("div", { class: "run-body" }, graph, panel));
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
      title.textContent = node.title.length > 28 ? `${node.title.slice(0, 27)}…` : node.title;
      const sub = s("text", { x: 10, y: 40, class: "sub" });
      const tooltip = s("title");
      tooltip.textContent = `${node.id}: ${node.title}`;
      group.append(tooltip, title, sub);
      group.addEventListener("click", () => void select(node.id));
      group.addEventListener("keydown", (event) => {
        if ((event as KeyboardEvent).key === "Enter") void select(node.id);
      });
      elements.set(node.id, group);
      paint(node);
      svg.append(group);
    }
    graph.replaceChildren(svg);
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
  };

  const drawHeader = (run: RunView, summary: RunSummaryView) => {
    const final = ["completed", "partial", "failed", "cancelled", "stopped"].includes(
      summary.status,
    );
    const cancel =
      run.live && !final ? h("button", { id: "cancel", class: "danger" }, "Cancel run") : null;
    cancel?.addEventListener("click", async () => {
      cancel.setAttribute("disabled", "");
      const answer = await post(`${runPath(runId)}/cancel`, {});
      if (!answer.ok) cancel.replaceWith(h("span", { class: "error" }, answer.error ?? "failed"));
    });
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
  closeStream = () => source.close();
  source.onopen = () => {
    connection.textContent = "live";
  };
  source.onerror = () => {
    const ended = ["completed", "partial", "failed", "cancelled"].includes(
      current?.summary.status ?? "",
    );
    // A finished run's page stays as it was when its server stopped.
    if (ended) source.close();
    connection.textContent = ended ? "run ended" : "reconnecting…";
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
