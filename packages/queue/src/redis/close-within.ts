import type { Redis } from "ioredis";

/** Closes BullMQ clients gracefully, or drops their connections when Redis does not answer. */
export async function closeWithin(
  clients: readonly { close(): Promise<void> }[],
  connections: readonly Redis[],
  boundMs: number,
): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = Promise.allSettled(clients.map((client) => client.close()));
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, boundMs);
  });
  await Promise.race([closed, late]);
  clearTimeout(timer);
  for (const connection of connections) connection.disconnect();
}
