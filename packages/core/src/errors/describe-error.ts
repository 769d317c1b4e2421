import { TaskLedgerError } from "./errors.js";

/** One line for a report or a prompt: the message, and our error code when there is one. */
export function describeError(error: unknown): string {
  if (TaskLedgerError.isInstance(error)) return `${error.message} [${error.code}]`;
  if (error instanceof Error) return error.message;
  return String(error);
}

/** What a `run-failed` record keeps of an error. */
export function errorInfo(error: unknown): { code: string; message: string } {
  if (TaskLedgerError.isInstance(error)) return { code: error.code, message: error.message };
  return { code: "unknown", message: error instanceof Error ? error.message : String(error) };
}
