import { estimateTokens, truncateToTokens } from "../text/tokens.js";
import type { SubTask } from "./sub-task.js";

/** A finished sub-task whose output may be passed forward. */
export interface CompletedOutput {
  subTask: SubTask;
  outputData: string;
  /** Completion order within the run: higher is newer. */
  order: number;
  /** Files its merged work changed, from git (with worktrees). */
  filesChanged?: readonly string[];
}

// Files named per dependency; the rest are counted.
const maxFilesNamed = 30;

export interface DependencyContext {
  text: string;
  /** Sub-tasks whose output is in `text`, some possibly cut. */
  included: string[];
  /** Ancestors left out because the budget ran out. */
  omitted: string[];
}

// Below this many tokens a section is not worth its heading.
const minSectionTokens = 40;

/**
 * The outputs a sub-task receives: all its ancestors, nearest first (direct dependencies, then
 * theirs, …) and newest first among equals, each cut so the whole stays within `budgetTokens`.
 */
export function buildDependencyContext(
  subTask: SubTask,
  byId: Pick<ReadonlyMap<string, SubTask>, "get">,
  outputs: Pick<ReadonlyMap<string, CompletedOutput>, "get">,
  budgetTokens: number,
): DependencyContext {
  // No more sections than the budget can hold are ever needed, so the walk stops there.
  const maxSections = Math.floor(budgetTokens / minSectionTokens);
  const distance = ancestorDistances(subTask, byId, maxSections + 1);
  const ranked = [...distance.keys()]
    .map((id) => outputs.get(id))
    .filter((output): output is CompletedOutput => output !== undefined)
    .sort((a, b) => distance.get(a.subTask.id)! - distance.get(b.subTask.id)! || b.order - a.order);

  // Lowest-priority outputs go first when even a short section each would not fit.
  const omitted: string[] = [];
  while (ranked.length * minSectionTokens > budgetTokens) {
    omitted.unshift(ranked.pop()!.subTask.id);
  }
  const sections = ranked.map((output) => ({
    heading: `### ${output.subTask.id}: ${output.subTask.title}\n`,
    body: withFiles(output.outputData.trim() || "(no output)", output.filesChanged),
  }));
  const cap = fairShare(
    sections.map((section) => estimateTokens(section.heading + section.body) + 1),
    budgetTokens,
  );
  const texts = sections.map(
    ({ heading, body }) => heading + truncateToTokens(body, cap - estimateTokens(heading) - 1),
  );
  const included = ranked.map((output) => output.subTask.id);
  let text = texts.join("\n\n");
  if (omitted.length > 0) {
    text += `${text ? "\n\n" : ""}(Outputs of ${omitted.join(", ")} left out to fit the context budget.)`;
  }
  return { text, included, omitted };
}

/** The output followed by the files the dependency changed (from git, not from the agent). */
function withFiles(body: string, files: readonly string[] | undefined): string {
  if (!files || files.length === 0) return body;
  const named = files.slice(0, maxFilesNamed).join(", ");
  const more = files.length > maxFilesNamed ? ` and ${files.length - maxFilesNamed} more` : "";
  return `Files changed: ${named}${more}.\n${body}`;
}

/**
 * The largest per-section size such that sections cut to it fit the budget: small outputs pass
 * whole and the large ones share what is left equally.
 */
function fairShare(sizes: readonly number[], budget: number): number {
  const sorted = [...sizes].sort((a, b) => a - b);
  let remaining = budget;
  for (let i = 0; i < sorted.length; i++) {
    const share = Math.floor(remaining / (sorted.length - i));
    if (sorted[i]! > share) return share;
    remaining -= sorted[i]!;
  }
  return Number.POSITIVE_INFINITY;
}

/** Breadth-first distance from `start` to its nearest `limit` ancestors (direct dependencies are 1). */
function ancestorDistances(
  start: SubTask,
  byId: Pick<ReadonlyMap<string, SubTask>, "get">,
  limit: number,
): Map<string, number> {
  const distance = new Map<string, number>();
  let frontier: readonly string[] = start.dependsOn;
  for (let depth = 1; frontier.length > 0; depth++) {
    const next: string[] = [];
    for (const id of frontier) {
      if (distance.size >= limit) return distance;
      if (distance.has(id) || id === start.id) continue;
      distance.set(id, depth);
      next.push(...(byId.get(id)?.dependsOn ?? []));
    }
    frontier = next;
  }
  return distance;
}
