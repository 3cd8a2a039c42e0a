//! The scripted model: a JSON file of turns, for tests and the demo.
//!
//! Format: `{"sessions": {"1": [TURN, ...], "*": [TURN, ...]}}` where a TURN is
//! `{"text", "tool_calls": [{"name", "arguments" | "arguments_raw"}], "usage", "cut"}`,
//! every key optional (`cut`: the answer comes back stopped before its end,
//! for this reason, as a runaway answer from a real server does). Request `i` of session `n` gets turn `i` of entry `n`
//! (or of `"*"`); past the last turn the answer is text only, which ends the session.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use async_trait::async_trait;
use serde::Deserialize;

use super::{
    ChatRequest, ChatResponse, ModelError, ModelSpec, Provider, RequestContext, ToolCall, Usage,
};
use crate::error::bad_input;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedModel {
    pub sessions: BTreeMap<String, Vec<Turn>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    pub usage: Option<Usage>,
    pub cut: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub name: String,
    pub arguments: Option<serde_json::Value>,
    /// Sent as the raw arguments string, to simulate a malformed call.
    pub arguments_raw: Option<String>,
}

impl ScriptedModel {
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<ScriptedModel> {
        let model: ScriptedModel = serde_json::from_str(text).map_err(|e| {
            bad_input(format!(
                "scripted model {origin} is not valid: {e}; expected {{\"sessions\": {{\"1\": [TURN, ...], \"*\": [...]}}}}"
            ))
        })?;
        for key in model.sessions.keys() {
            if key != "*" && key.parse::<u32>().is_err() {
                return Err(bad_input(format!(
                    "scripted model {origin}: session key `{key}` is neither a session number nor \"*\""
                )));
            }
        }
        Ok(model)
    }

    fn turns_for(&self, session: u32) -> &[Turn] {
        self.sessions
            .get(&session.to_string())
            .or_else(|| self.sessions.get("*"))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The response to request `ctx.request_index` of session `ctx.session`.
    pub fn respond(&self, ctx: RequestContext, request: &ChatRequest) -> ChatResponse {
        let turns = self.turns_for(ctx.session);
        let Some(turn) = turns.get(ctx.request_index as usize) else {
            return ChatResponse {
                text: "(the scripted model has no more turns for this session)".into(),
                tool_calls: Vec::new(),
                usage: estimate_usage(request, ""),
                cost_usd: 0.0,
                cut: None,
            };
        };
        let tool_calls = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, call)| ToolCall {
                id: format!("call_{}_{}_{}", ctx.session, ctx.request_index, i),
                name: call.name.clone(),
                arguments: match (&call.arguments_raw, &call.arguments) {
                    (Some(raw), _) => raw.clone(),
                    (None, Some(args)) => args.to_string(),
                    (None, None) => "{}".to_string(),
                },
            })
            .collect::<Vec<_>>();
        let said: String = tool_calls
            .iter()
            .map(|c| c.arguments.as_str())
            .collect::<String>()
            + &turn.text;
        ChatResponse {
            text: turn.text.clone(),
            usage: turn.usage.unwrap_or_else(|| estimate_usage(request, &said)),
            tool_calls,
            cost_usd: 0.0,
            cut: turn.cut.clone(),
        }
    }
}

/// About four characters a token, the usual rule of thumb, when the script gives no usage.
fn estimate_usage(request: &ChatRequest, said: &str) -> Usage {
    let sent = serde_json::to_string(request).map(|s| s.len()).unwrap_or(0);
    Usage {
        input_tokens: (sent / 4) as u64,
        output_tokens: (said.len() / 4).max(1) as u64,
        cached_tokens: 0,
    }
}

/// [`ScriptedModel`] behind the [`Provider`] trait.
pub struct ScriptedProvider {
    spec: ModelSpec,
    model: ScriptedModel,
}

impl ScriptedProvider {
    pub fn load(spec: &ModelSpec) -> anyhow::Result<ScriptedProvider> {
        let path = Path::new(&spec.name);
        let text = std::fs::read_to_string(path)
            .map_err(|e| {
                bad_input(format!(
                    "cannot read scripted model {}: {e}; check the path given by --model, LONGRUN_MODEL or [model] in longrun.toml",
                    path.display()
                ))
            })
            .context("failed to open the model")?;
        let model = ScriptedModel::parse(&text, &path.display().to_string())?;
        Ok(ScriptedProvider {
            spec: spec.clone(),
            model,
        })
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn describe(&self) -> String {
        self.spec.display()
    }

    async fn complete(
        &self,
        ctx: RequestContext,
        request: &ChatRequest,
        _retries: &super::RetrySink,
    ) -> Result<ChatResponse, ModelError> {
        Ok(self.model.respond(ctx, request))
    }
}
