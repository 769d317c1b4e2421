import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { checkSchema, integrationModes, maxCandidates } from "@taskledger/core";
import { z } from "zod";
import { UsageError } from "./usage-error.js";

/** The project config file's name, looked for from `--cwd` up to the repository's top. */
export const projectConfigName = "taskledger.json";

/**
 * What a project keeps for every run (`taskledger.json`), validated strictly: an unknown key is an
 * error naming it, not a silent typo. Options given on the command line win over it.
 */
export const projectConfigSchema = z
  .object({
    $schema: z.string().optional().describe("The JSON Schema this file follows."),
    setup: z
      .union([
        z.string().min(1),
        z
          .object({
            command: z.string().min(1),
            inputs: z.array(z.string().min(1)).max(50).optional(),
            timeoutSeconds: z.number().positive().max(86_400).optional(),
          })
          .strict(),
      ])
      .optional()
      .describe(
        "Shell command run in each new worktree (in the run's directory there), and again when its inputs (default: lockfiles) change.",
      ),
    include: z
      .array(z.string().min(1))
      .max(200)
      .optional()
      .describe(
        "gitignore patterns of ignored files each worktree gets, besides .worktreeinclude's.",
      ),
    dependencies: z
      .boolean()
      .optional()
      .describe(
        "Copy ignored node_modules and Python virtual environments into each worktree (default true).",
      ),
    slots: z
      .union([
        z.literal(false),
        z
          .object({
            max: z.number().int().min(0).max(100).optional(),
            maxSizeGB: z.number().min(0).max(10_000).optional(),
            maxAgeDays: z.number().min(0).max(3650).optional(),
          })
          .strict(),
      ])
      .optional()
      .describe(
        "Worktree slots kept between runs (default at most 8, 10 GB, unused 7 days); false makes each run's own and removes them at its end.",
      ),
    checks: z
      .array(checkSchema)
      .max(20)
      .optional()
      .describe("Checks every sub-task must pass besides its own, like a sub-task's checks."),
    projectChecks: z
      .boolean()
      .optional()
      .describe(
        "False: the project's own test and typecheck commands are not added to the checks of sub-tasks that change files.",
      ),
    explore: z
      .boolean()
      .optional()
      .describe("True: before planning, one read-only agent session looks up what the plan needs."),
    integration: z
      .enum(integrationModes)
      .optional()
      .describe(
        "When merged work is checked (the project's tests and typecheck, the run's and the sub-tasks' command checks) before it lands on the run's branch: batch (default), each, end (only the final result) or off.",
      ),
    acceptance: z
      .union([
        z.boolean(),
        z.object({ rounds: z.number().int().min(0).max(5).optional() }).strict(),
      ])
      .optional()
      .describe(
        "Judge the request as a whole once every sub-task is done (default true): false turns it off; { rounds } is how many rounds of sub-tasks are planned for what it finds missing (0 to 5, default 1).",
      ),
    bestOf: z
      .union([
        z.number().int().min(1).max(maxCandidates),
        z
          .object({
            candidates: z.number().int().min(1).max(maxCandidates),
            for: z.enum(["risky", "all"]).optional(),
            ladder: z.boolean().optional(),
            models: z.array(z.string().min(1)).max(maxCandidates).optional(),
          })
          .strict(),
      ])
      .optional()
      .describe(
        "Parallel candidates: how many a risky sub-task gets at once (2 to 8), or { candidates, for: risky|all, ladder, models }.",
      ),
    agentModel: z
      .string()
      .regex(/^[^/\s]+\/\S+$/, "must look like provider/model")
      .optional()
      .describe("The model the agents use, provider/model."),
    concurrency: z.number().int().min(1).max(64).optional().describe("Sub-tasks running at once."),
    isolation: z
      .enum(["auto", "worktree", "shared"])
      .optional()
      .describe("Where attempts work: auto, worktree or shared."),
    passEnv: z
      .array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name"))
      .max(100)
      .optional()
      .describe(
        "Host environment variables every agent gets besides its own list (PATH, locale, terminal, its provider's key): DATABASE_URL, …",
      ),
    agentBaseUrl: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        "Where the agent sends its model calls: Claude Code's ANTHROPIC_BASE_URL, a Codex model provider's base_url, the baseURL of opencode's provider.",
      ),
    sandbox: z
      .union([
        z.enum(["auto", "required", "off"]),
        z
          .object({
            mode: z.enum(["auto", "required", "off"]).optional(),
            network: z
              .object({ allow: z.array(z.string().min(1)).max(200).optional() })
              .strict()
              .optional(),
            homeReads: z.array(z.string().min(1)).max(100).optional(),
          })
          .strict(),
      ])
      .optional()
      .describe(
        "The OS sandbox around every agent, check and setup: auto, required or off, or { mode, network: { allow: [hosts] }, homeReads: [paths] }: the hosts the project's agents, tests and setup may reach besides the model endpoint, and what they read in the user's home besides the project, its toolchains and package caches (~/… paths; \"~\" reads the whole home but the credential stores).",
      ),
  })
  .strict();

export type ProjectConfig = z.infer<typeof projectConfigSchema>;

export interface LoadedConfig {
  path: string;
  config: ProjectConfig;
}

/**
 * The project config: `explicit` (`--config`), else `taskledger.json` in `cwd` or the nearest
 * directory above it, up to the repository's top. An unreadable file, bad JSON, an unknown key
 * or a wrong type is a `UsageError` naming the file and the key.
 */
export async function loadProjectConfig(
  cwd: string,
  explicit: string | undefined,
): Promise<LoadedConfig | undefined> {
  const path = explicit === undefined ? findConfig(cwd) : resolve(cwd, explicit);
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new UsageError(`cannot read the config file ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = projectConfigSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues
      .flatMap(furthest)
      .slice(0, 5)
      .map((issue) => {
        if (issue.code === "unrecognized_keys") {
          const where = issue.path.length > 0 ? ` in "${issue.path.join(".")}"` : "";
          return `unknown key${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}${where}`;
        }
        return `"${issue.path.join(".") || "(top)"}": ${issue.message}`;
      });
    throw new UsageError(`${path}: ${problems.join("; ")}`);
  }
  return { path, config: parsed.data };
}

type Issue = z.core.$ZodIssue;

/**
 * A value that matches no branch of a union (`"sandbox"`: a mode or an object) as the branch that
 * got furthest says it (`"sandbox.homeReads": expected array`), not zod's bare "Invalid input".
 */
function furthest(issue: Issue): Issue[] {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return [issue];
  // An unknown key names a place beneath the path it is reported at.
  const depth = (issues: Issue[]) =>
    Math.max(
      0,
      ...issues.map((sub) => sub.path.length + (sub.code === "unrecognized_keys" ? 1 : 0)),
    );
  const branch = issue.errors.reduce((best, next) => (depth(next) > depth(best) ? next : best));
  if (depth(branch) === 0) return [issue];
  return branch.flatMap((sub) => furthest({ ...sub, path: [...issue.path, ...sub.path] } as Issue));
}

function findConfig(cwd: string): string | undefined {
  let dir = resolve(cwd);
  for (;;) {
    const candidate = join(dir, projectConfigName);
    if (existsSync(candidate)) return candidate;
    // The repository's top is as far as a project's config can be.
    if (existsSync(join(dir, ".git"))) return undefined;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The config's path as the user would name it from `cwd`. */
export function shownPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel.startsWith("..") ? path : rel || ".";
}

/** The JSON Schema published as `taskledger.schema.json`, for editors (`"$schema"`). */
export function projectConfigJsonSchema(): Record<string, unknown> {
  return {
    ...z.toJSONSchema(projectConfigSchema, { target: "draft-2020-12" }),
    title: "taskledger project config (taskledger.json)",
  };
}
