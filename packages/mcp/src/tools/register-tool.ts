import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { clipMiddle, describeError } from "@taskledger/core";
import type { ZodRawShape, z } from "zod";
import { redact } from "../security/redact.js";
import type { ToolContext } from "./tool-context.js";
import { limits } from "./tool-schemas.js";

/** Sends one progress notification of the call: a growing value, its bound when known, a line. */
export type Progress = (value: number, total: number | undefined, message: string) => Promise<void>;

/**
 * A `registerTool` for taskledger's tools: the handler returns the structured result (sent as
 * `structuredContent` and as JSON text) or throws (a tool error with its message); every text is
 * redacted, an error's clipped, and `progress` is there when the caller asked for it.
 */
export function toolRegistrar(ctx: ToolContext) {
  return <In extends ZodRawShape, Out extends z.ZodObject>(
    name: string,
    config: {
      title: string;
      description: string;
      inputSchema: In;
      outputSchema: Out;
      annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
    },
    handler: (
      args: z.infer<z.ZodObject<In>>,
      extra: { signal: AbortSignal; progress: Progress | undefined },
    ) => Promise<z.infer<Out>>,
  ) => {
    ctx.mcp.registerTool(
      name,
      { ...config, annotations: { openWorldHint: false, ...config.annotations } },
      // biome-ignore lint/suspicious/noExplicitAny: the SDK's callback type is generic over both zod versions
      (async (args: any, extra: any): Promise<CallToolResult> => {
        const token = extra._meta?.progressToken;
        const progress: Progress | undefined =
          token === undefined
            ? undefined
            : (value, total, message) =>
                extra
                  .sendNotification({
                    method: "notifications/progress",
                    params: {
                      progressToken: token,
                      progress: value,
                      ...(total === undefined ? {} : { total }),
                      message: redact(message, ctx.secrets),
                    },
                  })
                  .catch(() => {});
        try {
          const result = redact(
            await handler(args, { signal: extra.signal, progress }),
            ctx.secrets,
          );
          return {
            content: [{ type: "text", text: JSON.stringify(result) }],
            structuredContent: result as Record<string, unknown>,
          };
        } catch (error) {
          return {
            isError: true,
            content: [
              {
                type: "text",
                text: redact(clipMiddle(describeError(error), limits.output), ctx.secrets),
              },
            ],
          };
        }
      }) as never,
    );
  };
}
