//! The `tools` strategy: the plain agent loop, for models that call tools.
//! The model changes files with `write_file` and `edit_file`; the request
//! is the conversation as it stands; nothing starts the conversation
//! again. A subagent always runs this strategy.

use std::ops::Range;

use super::seam::{FileWrites, Restart, Strategy, Turn};
use crate::config::HarnessSettings;
use crate::model::{ChatRequest, ToolCall};

pub struct Tools {
    /// `[harness] retry_temperature`.
    retry_temperature: Option<f64>,
    /// The temperature of the requests, once it is not the configured one.
    temperature: Option<f64>,
}

impl Tools {
    pub fn new(settings: &HarnessSettings) -> Tools {
        Tools {
            retry_temperature: settings.retry_temperature,
            temperature: None,
        }
    }
}

impl Strategy for Tools {
    fn shape(&self, request: &mut ChatRequest) {
        request.temperature = self.temperature;
    }

    /// The same request at the same temperature runs away the same way, so
    /// the next is sampled at the retry temperature when one is set (by
    /// default only where `model/family.rs` says it was measured).
    /// Unmeasured for models that call tools.
    fn answer_cut(&mut self) {
        if let Some(t) = self.retry_temperature {
            self.temperature = Some(t);
        }
    }

    fn file_writes(&self, _text: &str, _taken: &[Range<usize>]) -> FileWrites {
        FileWrites::default()
    }

    fn ran_nothing(&mut self, _answer: &str, _turn: Turn<'_>) {}

    fn restarts_after_nothing(&self, _turn: Turn<'_>) -> bool {
        false
    }

    fn after_calls(
        &mut self,
        _calls: &[ToolCall],
        _changed: bool,
        _turn: Turn<'_>,
    ) -> Option<Restart> {
        None
    }

    fn before_end(&mut self, _turn: Turn<'_>) -> Option<Restart> {
        None
    }

    fn how_to_change(&self, names: &str) -> String {
        match names.is_empty() {
            false => format!("change {names} with `write_file` or `edit_file`"),
            true => "change the code with `write_file` or `edit_file`".to_string(),
        }
    }

    fn how_to_work(&self) -> &'static str {
        "call `write_file` or `edit_file` to change files and `bash` to run commands and commit"
    }
}
