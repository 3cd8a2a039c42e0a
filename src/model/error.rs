//! Why a model call failed, and the kind of failure the worker is told.

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// The provider refused the credentials: the run must stop.
    #[error("the provider refused the credentials: {0}")]
    Auth(String),
    /// The prompt is over the model's context window.
    #[error("context length exceeded: {0}")]
    ContextLength(String),
    /// The provider stayed unreachable, overloaded or rate limited through
    /// the retries, or asked for a wait longer than a session waits: the run
    /// pauses until it answers again. `wait` is the reset the provider named.
    #[error("the provider is unavailable: {message}")]
    Unavailable {
        message: String,
        wait: Option<std::time::Duration>,
    },
    /// Anything else, after retries where they apply.
    #[error("{0}")]
    Failed(String),
}

impl ModelError {
    /// True when no later session can succeed either, so the run stops.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ModelError::Auth(_))
    }

    /// The kind, as the worker is told it.
    pub fn kind(&self) -> ModelErrorKind {
        match self {
            ModelError::Auth(_) => ModelErrorKind::Auth,
            ModelError::ContextLength(_) => ModelErrorKind::ContextLength,
            ModelError::Unavailable { .. } => ModelErrorKind::Unavailable,
            ModelError::Failed(_) => ModelErrorKind::Failed,
        }
    }
}

/// [`ModelError`]'s variant without its message, for the broker and the transcript.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    Auth,
    /// The worker may compact its context and ask again.
    ContextLength,
    /// The run pauses until the provider answers again; the session ends.
    Unavailable,
    #[default]
    Failed,
}
