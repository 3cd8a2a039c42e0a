//! `write_todos {todos: [{content, status}]}`: the model's own task list,
//! shown back to it at the end of every turn and carried through compaction.

use serde::Deserialize;
use serde_json::json;

use crate::model::ToolSpec;

#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: Status,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Default)]
pub struct Todos {
    items: Vec<Todo>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    todos: Vec<Todo>,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "write_todos".into(),
        description: "Replace your todo list for this session. The list is shown back to you at the end of every turn and survives context compaction. Keep one item in_progress at a time.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"todos": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string"},
                    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
                },
                "required": ["content", "status"]
            }}},
            "required": ["todos"]
        }),
    }
}

impl Todos {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Replace the list with the call's; the error says what the model got wrong.
    pub fn write(&mut self, arguments: &serde_json::Value) -> anyhow::Result<String> {
        let args: Args = serde_json::from_value(arguments.clone()).map_err(|e| {
            anyhow::anyhow!("write_todos takes {{\"todos\": [{{\"content\": \"...\", \"status\": \"pending\" | \"in_progress\" | \"completed\"}}]}}: {e}")
        })?;
        self.items = args.todos;
        let done = self
            .items
            .iter()
            .filter(|t| t.status == Status::Completed)
            .count();
        Ok(format!(
            "todo list saved: {} items, {done} completed",
            self.items.len()
        ))
    }

    /// The list as the model sees it.
    pub fn render(&self) -> String {
        let mut text = String::from("Your todo list:\n");
        for t in &self.items {
            let mark = match t.status {
                Status::Completed => "[x]",
                Status::InProgress => "[~]",
                Status::Pending => "[ ]",
            };
            text.push_str(&format!("- {mark} {}\n", t.content));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_list_renders_with_its_statuses() {
        let mut t = Todos::default();
        let args = json!({"todos": [{"content": "write parser", "status": "completed"},
                                    {"content": "run tests", "status": "in_progress"},
                                    {"content": "commit", "status": "pending"}]});
        assert_eq!(
            t.write(&args).unwrap(),
            "todo list saved: 3 items, 1 completed"
        );
        assert_eq!(
            t.render(),
            "Your todo list:\n- [x] write parser\n- [~] run tests\n- [ ] commit\n"
        );
    }

    #[test]
    fn a_bad_status_is_explained() {
        let mut t = Todos::default();
        let e = t
            .write(&json!({"todos": [{"content": "x", "status": "done"}]}))
            .unwrap_err();
        assert!(e.to_string().contains("\"in_progress\""), "{e}");
        assert!(t.is_empty());
    }
}
