// What the page's views share: element builders, the API with the page's token, formatting.
import type { TokensView } from "../view.js";

export const token = new URLSearchParams(location.search).get("token") ?? "";
export const svgNs = "http://www.w3.org/2000/svg";

export type Child = Node | string | number | undefined | null | false;

/** An element with attributes and children; strings become text nodes. */
export function h(
  tag: string,
  attributes: Record<string, string> = {},
  ...children: Child[]
): HTMLElement {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    element.append(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function s(tag: string, attributes: Record<string, string | number> = {}): SVGElement {
  const element = document.createElementNS(svgNs, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

/** An API answer that was not OK, with its HTTP status (404: no such run or sub-task). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export async function api<T>(path: string): Promise<T> {
  const response = await fetch(path, { headers: { "x-taskledger-token": token } });
  if (!response.ok) {
    const body = (await response.json().catch(() => ({}))) as { error?: string };
    throw new ApiError(body.error ?? `HTTP ${response.status}`, response.status);
  }
  return (await response.json()) as T;
}

export async function post(path: string, body: unknown): Promise<{ ok: boolean; error?: string }> {
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", "x-taskledger-token": token },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as { ok?: boolean; error?: string };
  return { ok: response.ok, ...(answer.error ? { error: answer.error } : {}) };
}

export function runPath(runId: string): string {
  return `/api/runs/${encodeURIComponent(runId)}`;
}

export function duration(ms: number): string {
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return minutes < 60
    ? `${minutes}m ${seconds % 60}s`
    : `${Math.floor(minutes / 60)}h ${minutes % 60}m`;
}

export function tokens(t: TokensView | undefined): string {
  if (!t) return "";
  const k = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}k` : String(n));
  return `${k(t.input)} in · ${k(t.output)} out`;
}

/** The cost slot: blank until runs record prices. */
export function cost(t: TokensView | undefined): HTMLElement {
  const text = t?.costUsd === undefined ? "—" : `$${t.costUsd.toFixed(t.costUsd < 1 ? 4 : 2)}`;
  return h("span", { class: "cost", "data-slot": "cost" }, text);
}

export function badge(status: string): HTMLElement {
  return h("span", { class: `badge status-${status}` }, status);
}

/**
 * Sets an SVG text to `text`, cut with "…" to fit `width` pixels as drawn (not a fixed count of
 * characters); the element must be on the page to be measured.
 */
export function fitText(element: SVGTextContentElement, text: string, width: number): void {
  element.textContent = text;
  if (element.getComputedTextLength() <= width) return;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    element.textContent = `${text.slice(0, mid)}…`;
    if (element.getComputedTextLength() <= width) low = mid;
    else high = mid - 1;
  }
  element.textContent = `${text.slice(0, low)}…`;
}
