import {
  candidateChoiceSchemaName,
  progressJudgmentSchemaName,
  taskLedgerSchemaName,
} from "@taskledger/core";
import type { RecordedRequest, ScriptedReply } from "./model-server.js";

/**
 * Who made a model call: the manager planning (or replanning), the judge, the comparative judge
 * choosing among candidates, or an agent.
 */
export type ModelRole = "plan" | "judge" | "choose" | "agent";

/** One reply for every call of a role, or a list answered in order, one a call. */
export type RoleReplies = ScriptedReply | readonly ScriptedReply[];

/** Replies by role; a role left out, or whose list has run out, gets a 500 counted as unexpected. */
export interface RoleScript {
  plan?: RoleReplies;
  judge?: RoleReplies;
  choose?: RoleReplies;
  agent?: RoleReplies;
}

// biome-ignore lint/suspicious/noExplicitAny: wire bodies of three providers are read loosely
type Loose = any;

/**
 * The role of a request, from the structured output it asks for: `task_ledger` is the planner's,
 * `progress_ledger_entry` the judge's, none an agent's. Works for the OpenAI, Anthropic and Gemini
 * faces and every JSON mode of `@taskledger/llm`.
 */
export function roleOf(request: RecordedRequest): ModelRole {
  const name = schemaNameOf(request.body as Loose);
  if (name === taskLedgerSchemaName) return "plan";
  if (name === progressJudgmentSchemaName) return "judge";
  if (name === candidateChoiceSchemaName) return "choose";
  return "agent";
}

/**
 * A `replies` function for `createModelServer` that answers each call from its role's script:
 * `createModelServer({ replies: scriptByRole({ plan, judge, agent }) })`.
 */
export function scriptByRole(
  script: RoleScript,
): (request: RecordedRequest) => ScriptedReply | undefined {
  const next = {
    plan: replier(script.plan),
    judge: replier(script.judge),
    choose: replier(script.choose),
    agent: replier(script.agent),
  };
  return (request) => next[roleOf(request)]();
}

/** The sub-task an agent's call is about, from the prompt core builds (`# Sub-task <id>:`). */
export function subTaskOf(request: RecordedRequest): string | undefined {
  return /# Sub-task ([\w.-]+):/.exec(JSON.stringify(request.body ?? ""))?.[1];
}

/** True when the agent's last message is a tool's result: its turn after the tool ran. */
export function afterToolResult(request: RecordedRequest): boolean {
  const body = request.body as Loose;
  const last = body?.messages?.at?.(-1) ?? body?.contents?.at?.(-1) ?? body?.input?.at?.(-1);
  if (last?.role === "tool" || last?.type === "function_call_output") return true;
  const parts: Loose[] = Array.isArray(last?.content) ? last.content : (last?.parts ?? []);
  return parts.some((part) => part?.type === "tool_result" || part?.functionResponse);
}

function replier(replies: RoleReplies | undefined): () => ScriptedReply | undefined {
  if (replies === undefined) return () => undefined;
  if (!Array.isArray(replies)) return () => replies as ScriptedReply;
  const queue = [...replies];
  return () => queue.shift();
}

function schemaNameOf(body: Loose): string | undefined {
  const named =
    body?.response_format?.json_schema?.name ??
    (body?.tool_choice?.type === "tool" ? body.tool_choice.name : undefined);
  if (typeof named === "string") return named;
  // Anthropic's output_config and Gemini's responseJsonSchema carry a schema but no name.
  const schema = body?.output_config?.format?.schema ?? body?.generationConfig?.responseJsonSchema;
  if (schema?.properties?.subTasks) return taskLedgerSchemaName;
  if (schema?.properties?.completed && schema?.properties?.feedback) {
    return progressJudgmentSchemaName;
  }
  if (schema?.properties?.winner && schema?.properties?.losers) return candidateChoiceSchemaName;
  // JSON-object and prompt modes name the object in the system prompt.
  const system = JSON.stringify(
    body?.system ?? body?.systemInstruction ?? body?.config?.systemInstruction ?? "",
  );
  const openaiSystem = JSON.stringify(
    (body?.messages ?? []).filter((m: Loose) => m?.role === "system"),
  );
  for (const name of [
    taskLedgerSchemaName,
    progressJudgmentSchemaName,
    candidateChoiceSchemaName,
  ]) {
    if (`${system}${openaiSystem}`.includes(`named ${name}`)) return name;
  }
  return undefined;
}
