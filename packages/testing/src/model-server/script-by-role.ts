import {
  acceptanceSchemaName,
  candidateChoiceSchemaName,
  progressJudgmentSchemaName,
  taskLedgerSchemaName,
} from "@taskledger/core";
import type { RecordedRequest, ScriptedCompletion, ScriptedReply } from "./model-server.js";

/**
 * Who made a model call: the manager planning (or replanning), the judge, the comparative judge
 * choosing among candidates, the acceptance judge of the request as a whole, or an agent.
 */
export type ModelRole = "plan" | "judge" | "choose" | "accept" | "agent";

/** One reply for every call of a role, or a list answered in order, one a call. */
export type RoleReplies = ScriptedReply | readonly ScriptedReply[];

/**
 * Replies by role; a role left out, or whose list has run out, gets a 500 counted as unexpected.
 * But `accept`: left out, every acceptance call is answered satisfied (`acceptanceReply()`), so a
 * script written before the acceptance judge existed runs as it did. A list that has run out is
 * still unexpected.
 */
export interface RoleScript {
  plan?: RoleReplies;
  judge?: RoleReplies;
  choose?: RoleReplies;
  accept?: RoleReplies;
  agent?: RoleReplies;
}

/** A gap the acceptance judge names: what the request asks for that the work does not do. */
export interface AcceptanceGapReply {
  what: string;
  why?: string;
}

/**
 * The acceptance judge's answer (`request_acceptance`): satisfied with no gaps, unsatisfied
 * naming them. `scriptByRole({ accept: acceptanceReply([{ what: "the README section" }]) })`.
 */
export function acceptanceReply(missing: readonly AcceptanceGapReply[] = []): ScriptedCompletion {
  return {
    text: JSON.stringify({
      satisfied: missing.length === 0,
      missing: missing.map((gap) => ({ what: gap.what, why: gap.why ?? "" })),
    }),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: wire bodies of three providers are read loosely
type Loose = any;

/**
 * The role of a request, from the structured output it asks for: `task_ledger` is the planner's,
 * `progress_ledger_entry` the judge's, `candidate_choice` the comparative judge's,
 * `request_acceptance` the acceptance judge's, none an agent's. Works for the OpenAI, Anthropic and Gemini
 * faces and every JSON mode of `@taskledger/llm`.
 */
export function roleOf(request: RecordedRequest): ModelRole {
  const name = schemaNameOf(request.body as Loose);
  if (name === taskLedgerSchemaName) return "plan";
  if (name === progressJudgmentSchemaName) return "judge";
  if (name === candidateChoiceSchemaName) return "choose";
  if (name === acceptanceSchemaName) return "accept";
  return "agent";
}

/**
 * A `replies` function for `createModelServer` that answers each call from its role's script:
 * `createModelServer({ replies: scriptByRole({ plan, judge, agent }) })`. The acceptance judge's
 * calls are answered satisfied unless the script has `accept`.
 */
export function scriptByRole(
  script: RoleScript,
): (request: RecordedRequest) => ScriptedReply | undefined {
  const next = {
    plan: replier(script.plan),
    judge: replier(script.judge),
    choose: replier(script.choose),
    accept: script.accept === undefined ? () => acceptanceReply() : replier(script.accept),
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
  if (schema?.properties?.satisfied && schema?.properties?.missing) return acceptanceSchemaName;
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
    acceptanceSchemaName,
  ]) {
    if (`${system}${openaiSystem}`.includes(`named ${name}`)) return name;
  }
  return undefined;
}
