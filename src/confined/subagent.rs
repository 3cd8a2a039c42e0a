//! `task {description, prompt}`: a subagent — the same loop with a fresh
//! context, read-only tools and its own step budget. Only its final answer
//! goes back to the session; its tokens count toward the session's budget.

use serde_json::json;

use crate::model::ToolSpec;

pub const SYSTEM_PROMPT: &str = "You are a subagent of a coding session: you answer one question about the repository in your workspace and then stop. \
You have read-only tools: read_file, list_files, grep, and bash for commands the permission rules allow outright (ls, cat, git log, ...); you cannot change files. Investigate with as few calls as you need, then reply with your final answer and no tool call. \
The answer is all the session sees of your work: make it self-contained, concrete (paths, names, line numbers) and short.";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "task".into(),
        description: "Hand a self-contained investigation to a subagent with a fresh context and read-only tools (read_file, list_files, grep, and bash for commands the permission rules allow outright). It returns only its final answer, which keeps your own context small. Use it for searches across many files or questions whose exploration you do not need to see.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A few words saying what the task is."},
                "prompt": {"type": "string", "description": "Everything the subagent needs to know: the question and what to answer with."}
            },
            "required": ["description", "prompt"]
        }),
    }
}
