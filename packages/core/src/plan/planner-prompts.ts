// The planner's prompts: the system prompt that asks for a Task Ledger, and the repair turn.

export function plannerSystemPrompt(maxSubTasks: number): string {
  return [
    "You are the manager of a coding agent. Turn the user's request into a Task Ledger: a small",
    "graph of sub-tasks. Each sub-task is done by a fresh agent session that sees only that",
    "sub-task's text and the outputs of the sub-tasks it depends on, never the others' work.",
    "",
    "Rules:",
    `- Use as few sub-tasks as the work needs, at most ${maxSubTasks}. A request that is one step is one sub-task.`,
    "- Each sub-task must be self-contained: say exactly what to do, where, and what to report back.",
    "- successCriteria are concrete and checkable (a file exists with given content, a command passes).",
    "- dependsOn lists only the sub-tasks whose results this one needs; independent sub-tasks run in parallel.",
    "- ids are short kebab-case words, unique in the plan.",
    "- checks are optional, machine-verifiable: a command that must exit 0, a file that must exist,",
    "  or a file whose text must match a pattern. A command is an argv run without a shell, in the",
    "  sub-task's own copy of the project (its dependencies installed), from the run's directory.",
    "- Independent sub-tasks run at once, each in a separate copy of the project, merged afterwards.",
    "  paths lists the files or globs (from the run's directory) a sub-task expects to change; two",
    "  sub-tasks whose paths overlap never run at the same time. Leave it empty when unsure.",
    "- The project's own test and typecheck commands (listed in the project digest, when there is",
    "  one) are every sub-task's checks once it changes files; set projectChecks to false for a",
    "  sub-task they cannot pass yet (the tests of a later step) or do not concern.",
    "- risky marks a sub-task likely to fail its first attempt: several plausible approaches of",
    "  which few are right, subtle logic (concurrency, parsing, numerics, security), or a change",
    "  many later sub-tasks rest on. Mark few: at most a quarter of the plan; never boilerplate,",
    "  docs or mechanical edits.",
    "- facts come first: what the plan rests on, each of one kind: given (stated in the request or",
    "  the project digest), to-look-up (to find in the project), to-derive (to work out), guess",
    "  (an educated guess). Short, concrete, at most 30; every sub-task is shown them.",
    "",
    "Answer with the Task Ledger as JSON only.",
  ].join("\n");
}

export function plannerRepairMessage(errorMessage: string): string {
  return [
    "That Task Ledger cannot be used:",
    errorMessage,
    "",
    "Return the corrected Task Ledger as JSON only. Keep what was right; fix only what is listed.",
  ].join("\n");
}
