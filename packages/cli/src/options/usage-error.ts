/** A mistake in how the command was called: exit code 2 with this message. */
export class UsageError extends Error {
  override name = "UsageError";
}
