/**
 * Cuts `text` to at most `maxChars`, keeping its start and (the larger share) its end, with a
 * marker saying how much was dropped: the end of a log or an answer is where the outcome is.
 */
export function clipMiddle(text: string, maxChars: number, headShare = 0.3): string {
  const limit = Math.max(0, Math.floor(maxChars));
  if (text.length <= limit) return text;
  const marker = `\n[… ${text.length - limit} characters cut …]\n`;
  if (limit <= marker.length + 2) return text.slice(text.length - limit);
  const room = limit - marker.length;
  const head = Math.floor(room * headShare);
  return text.slice(0, head) + marker + text.slice(text.length - (room - head));
}

/** Keeps the end of `text` within `maxChars`, saying how much of the start was dropped. */
export function clipStart(text: string, maxChars: number): string {
  return clipMiddle(text, maxChars, 0);
}

/** One line of at most `maxChars`, for short quotes of inputs and names. */
export function oneLine(text: string, maxChars: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= maxChars ? flat : `${flat.slice(0, Math.max(0, maxChars - 1))}…`;
}
