// A provider-neutral estimate: about four characters a token for English text and code. Budgets
// for prompts and context only need to be safe, not exact.
const charsPerToken = 4;

export function estimateTokens(text: string): number {
  return Math.ceil(text.length / charsPerToken);
}

/** Cuts `text` to about `maxTokens`, keeping the start and saying how much was dropped. */
export function truncateToTokens(text: string, maxTokens: number): string {
  const maxChars = Math.max(0, Math.floor(maxTokens * charsPerToken));
  if (text.length <= maxChars) return text;
  const marker = `\n[… ${text.length - maxChars} characters cut to fit the budget]`;
  if (maxChars <= marker.length) return text.slice(0, maxChars);
  return text.slice(0, maxChars - marker.length) + marker;
}
