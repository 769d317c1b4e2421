// `decompose: "auto"` skips the planning call only when a request is plainly one small step.
// A miss either way is cheap in one direction only: planning a one-step request costs one call,
// running a big job as one unplanned sub-task costs the run. So anything unsure goes to the planner,
// whose answer may well be one sub-task.

// Words that join several steps ("build X and then deploy it").
const multiStep =
  /\b(and|then|after|before|also|finally|each|every|all|plus|with)\b|[;\n&+]|^\s*(\d+[.)]|[-*])\s/im;

// Verbs of a small, bounded action on something named.
const smallAction =
  /^(please\s+)?(open|show|print|list|cat|read|display|echo|say|run|fix|correct|rename|delete|remove|bump|format|sort|explain|describe|summari[sz]e|what|where|which|who|how|why|is|are|does|count|undo|revert|commit|comment|uncomment)\b/i;

// Nouns and verbs that name a job bigger than one step, whatever the sentence's length.
const bigJob =
  /\b(port(ing)?|migrat\w*|refactor\w*|rewrite|re-?architect\w*|implement\w*|build|design\w*|convert\w*|integrat\w*|oauth|auth\w*|login|sign[- ]?(in|up)|feature|api|endpoint|database|schema|projects?|codebase|repo(sitory)?|app(lication)?|service|system|pipeline|ci|cd|deploy\w*|optimi[sz]\w*|performance|security|secure|support|(?<!npm |yarn |pnpm |run )tests?|test suite|coverage|framework|library|module|package|dependencies|from .+ to|across|whole|entire|everywhere|everything|scaffold\w*|set ?up|architecture|backend|frontend|ui|page|component|docker\w*|kubernetes|typescript|python|rust|java|go|bugs?|leaks?|crash\w*|race|fail\w*|broken|flaky|errors|memory|server|client|everything)\b/i;

/** True only for a request that is plainly one small step: short, one sentence, a small action. */
export function isTrivialRequest(request: string): boolean {
  const text = request.trim();
  if (text.length === 0 || text.length > 100) return false;
  const sentences = text.split(/[.!?]+\s/).filter(Boolean).length;
  if (sentences > 1 || multiStep.test(text)) return false;
  return smallAction.test(text) && !bigJob.test(text);
}
