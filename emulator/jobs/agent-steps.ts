// The scripted agent's steps written in each agent family's own step shape (browser-use history, Claude messages, ...).

export const AGENT_FAMILIES = [
  "browser-use",
  "claude-computer-use",
  "gemini-computer-use",
  "grok-computer-use",
  "meta-computer-use",
  "cua",
  "hyper-agent",
] as const;
export type AgentFamily = (typeof AGENT_FAMILIES)[number];

/** One thing the agent did: open a URL (with what it found there) or finish with its answer. */
export interface AgentStep {
  number: number;
  action: "go_to_url" | "done";
  url: string;
  title: string;
  ok: boolean;
  /** What the step produced: the page's title, the error, or the final answer. */
  text: string;
  startedAt: number;
  endedAt: number;
}

const DEFAULT_MODEL: Record<AgentFamily, string> = {
  "browser-use": "gpt-4o",
  "claude-computer-use": "claude-sonnet-4-5",
  "gemini-computer-use": "gemini-2.5-computer-use-preview-10-2025",
  "grok-computer-use": "grok-4.5",
  "meta-computer-use": "muse-spark-1.1",
  cua: "computer-use-preview",
  "hyper-agent": "gpt-4o",
};

const goal = (s: AgentStep) => (s.action === "done" ? "Report what was found" : `Open ${s.url}`);

/** The step in the family's wire shape; every shape carries the URL, the title and the action somewhere a client reads. */
export function formatStep(family: AgentFamily, s: AgentStep, opts: { llm?: string; version?: string }): Record<string, unknown> {
  const model = opts.llm ?? DEFAULT_MODEL[family];
  const action = s.action === "done" ? { done: { text: s.text, success: true } } : { go_to_url: { url: s.url } };
  const seconds = (ms: number) => Math.floor(ms / 1000);
  switch (family) {
    case "browser-use":
      return {
        model_output: {
          current_state: {
            evaluation_previous_goal: s.number === 1 ? "Unknown - just started" : "Success",
            memory: s.text,
            next_goal: goal(s),
          },
          action: [action],
        },
        result: [
          {
            is_done: s.action === "done",
            success: s.action === "done" ? true : s.ok,
            extracted_content: s.text,
            error: s.ok ? null : s.text,
            include_in_memory: true,
          },
        ],
        state: {
          url: s.url,
          title: s.title,
          tabs: [{ page_id: 0, url: s.url, title: s.title }],
          interacted_element: [null],
          screenshot: null,
        },
        metadata: { step_start_time: s.startedAt / 1000, step_end_time: s.endedAt / 1000, input_tokens: 0, step_number: s.number },
      };
    case "claude-computer-use":
      return {
        role: "assistant",
        type: "message",
        model,
        content:
          s.action === "done"
            ? [{ type: "text", text: s.text }]
            : [
                { type: "text", text: `${goal(s)}. ${s.text}` },
                { type: "tool_use", id: `toolu_${s.number}`, name: "computer", input: { action: "navigate", url: s.url, title: s.title } },
              ],
        stop_reason: s.action === "done" ? "end_turn" : "tool_use",
        stop_sequence: null,
      };
    case "gemini-computer-use":
      return {
        candidates: [
          {
            content: {
              role: "model",
              parts:
                s.action === "done"
                  ? [{ text: s.text }]
                  : [{ text: s.text }, { functionCall: { name: "navigate", args: { url: s.url, title: s.title } } }],
            },
            finishReason: "STOP",
          },
        ],
        modelVersion: model,
      };
    case "hyper-agent": {
      const actionOutput = { success: s.ok, message: s.text };
      const act =
        s.action === "done"
          ? { type: "complete", params: { success: true, text: s.text } }
          : { type: "goToUrl", params: { url: s.url, title: s.title } };
      if (opts.version === "1.1.0")
        return { idx: s.number - 1, agentOutput: { thoughts: goal(s), memory: s.text, action: act }, actionOutput };
      return {
        idx: s.number - 1,
        agentOutput: { thoughts: goal(s), memory: s.text, nextGoal: goal(s), actions: [act] },
        actionOutputs: [actionOutput],
      };
    }
    default: {
      // cua, grok and meta report OpenAI-responses-like steps; grok writes its times as ISO strings.
      const created = family === "grok-computer-use" ? new Date(s.startedAt).toISOString() : seconds(s.startedAt);
      const completed = family === "grok-computer-use" ? new Date(s.endedAt).toISOString() : seconds(s.endedAt);
      const output =
        s.action === "done"
          ? [{ type: "message", role: "assistant", content: [{ type: "output_text", text: s.text }] }]
          : [
              {
                type: "computer_call",
                call_id: `call_${s.number}`,
                action: { type: "navigate", url: s.url },
                status: "completed",
                title: s.title,
              },
            ];
      return {
        created_at: created,
        ...(family === "cua" ? {} : { completed_at: completed }),
        output_text: s.text,
        error: s.ok ? null : family === "grok-computer-use" ? s.text : { code: "navigation_failed", message: s.text },
        incomplete_details: null,
        model,
        output,
        reasoning:
          family === "grok-computer-use" ? null : { effort: null, ...(family === "cua" ? { generate_summary: null } : { summary: null }) },
        status: "completed",
      };
    }
  }
}
