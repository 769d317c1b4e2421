import { isAbsolute, relative } from "node:path";
import { addUsage, emptyUsage, type ToolCallRecord, type Usage } from "@taskledger/core";
import type { OpencodeEvent } from "../events/agent-events.js";
import { clip } from "../events/clip.js";

export interface TranscriptLimits {
  /** Tool calls kept; past it the oldest are dropped and counted. */
  maxToolCalls: number;
  /** Finish reasons kept; past it the oldest are dropped and counted. */
  maxSteps: number;
  maxFinalTextChars: number;
  maxErrors: number;
  maxFilesChanged: number;
}

export const defaultTranscriptLimits: TranscriptLimits = {
  maxToolCalls: 200,
  maxSteps: 1000,
  maxFinalTextChars: 16_000,
  maxErrors: 20,
  maxFilesChanged: 500,
};

const fileTools = new Set(["write", "edit", "patch", "multiedit", "apply_patch"]);
const rejectedPermission = /rejected permission|permission.*(denied|rejected)/i;

/** An error the agent reported, as kept: what it said, and what it passed on of the provider's answer. */
export interface TranscriptError {
  message: string;
  statusCode?: number;
  errorType?: string;
  retryAfterMs?: number;
}

/** What an attempt's events add up to, kept within fixed limits however long the run. */
export class Transcript {
  sessionId: string | undefined;
  usage: Usage = emptyUsage();
  readonly toolCalls: ToolCallRecord[] = [];
  toolCallsDropped = 0;
  toolCallCount = 0;
  readonly stepFinishReasons: string[] = [];
  stepsDropped = 0;
  stepCount = 0;
  /** Consecutive `unknown` finishes at the end: opencode 1.18 then loops forever. */
  unknownFinishStreak = 0;
  readonly errors: TranscriptError[] = [];
  errorCount = 0;
  readonly permissionRejections: string[] = [];
  unknownEvents = 0;
  private readonly files = new Set<string>();
  private stepText = "";
  private lastText = "";
  /** Tool calls made in the current step and the last finished step. */
  private stepToolCalls = 0;
  toolCallsInLastStep = 0;
  toolCallsBeforeLastStep = 0;
  lastStepUsage: Usage | undefined;
  /** Text the last finished step wrote (empty when it wrote none). */
  finalTextOfLastStep = "";

  constructor(
    private readonly cwd: string,
    private readonly limits: TranscriptLimits = defaultTranscriptLimits,
  ) {}

  add(event: OpencodeEvent): void {
    switch (event.type) {
      case "step-start":
        this.sessionId ??= event.sessionId;
        this.stepText = "";
        this.stepToolCalls = 0;
        return;
      case "text":
        this.sessionId ??= event.sessionId;
        this.stepText = clip(this.stepText + event.text, this.limits.maxFinalTextChars);
        if (this.stepText.trim()) this.lastText = this.stepText;
        return;
      case "tool-use":
        this.addToolCall(event);
        return;
      case "tool-started":
        // A notice for a live view; the call is counted by its `tool-use`.
        return;
      case "step-finish":
        this.usage = addUsage(this.usage, event.usage);
        this.lastStepUsage = event.usage;
        this.stepCount++;
        this.pushBounded(this.stepFinishReasons, event.reason, this.limits.maxSteps, () => {
          this.stepsDropped++;
        });
        this.unknownFinishStreak = event.reason === "unknown" ? this.unknownFinishStreak + 1 : 0;
        this.toolCallsBeforeLastStep = this.toolCallCount - this.stepToolCalls;
        this.toolCallsInLastStep = this.stepToolCalls;
        this.finalTextOfLastStep = this.stepText;
        return;
      case "error": {
        this.errorCount++;
        const error: TranscriptError = { message: event.message };
        if (event.statusCode !== undefined) error.statusCode = event.statusCode;
        if (event.errorType !== undefined) error.errorType = event.errorType;
        if (event.retryAfterMs !== undefined) error.retryAfterMs = event.retryAfterMs;
        this.pushBounded(this.errors, error, this.limits.maxErrors, () => {});
        return;
      }
      case "unknown":
        this.unknownEvents++;
        return;
    }
  }

  /** The agent's last non-empty text: usually its own account of what it did. */
  get finalText(): string {
    return this.lastText;
  }

  get filesChanged(): string[] {
    return [...this.files];
  }

  get lastFinishReason(): string | undefined {
    return this.stepFinishReasons.at(-1);
  }

  private addToolCall(event: Extract<OpencodeEvent, { type: "tool-use" }>): void {
    this.toolCallCount++;
    this.stepToolCalls++;
    const output = event.status === "error" && event.error ? event.error : event.output;
    const record: ToolCallRecord = {
      tool: event.tool,
      status: event.status,
      input: event.input,
      output,
    };
    this.pushBounded(this.toolCalls, record, this.limits.maxToolCalls, () => {
      this.toolCallsDropped++;
    });
    if (event.status === "error" && event.error && rejectedPermission.test(event.error)) {
      this.pushBounded(this.permissionRejections, `${event.tool}: ${event.error}`, 10, () => {});
    }
    if (event.filePath && fileTools.has(event.tool) && event.status === "completed") {
      const path = isAbsolute(event.filePath) ? relative(this.cwd, event.filePath) : event.filePath;
      if (this.files.size < this.limits.maxFilesChanged) this.files.add(path);
    }
  }

  private pushBounded<T>(list: T[], item: T, max: number, onDrop: () => void): void {
    list.push(item);
    if (list.length > max) {
      list.shift();
      onDrop();
    }
  }
}
