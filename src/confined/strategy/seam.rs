//! The one seam between the agent loop and what is particular to a kind of
//! model: the [`Strategy`] trait and what the loop hands it.
//!
//! The loop (`agent.rs`) owns what every session needs: the conversation,
//! the budget, the tools, the loop detector, the check after edits. A
//! strategy owns the rest: how the next request is shaped, how an answer's
//! text becomes edits, and when the conversation starts again. Not here:
//! either strategy's rules (`tools.rs`, `whole_file.rs`).

use std::ops::Range;

use crate::broker::WorkerLink;
use crate::confined::edit_check::EditCheck;
use crate::model::{ChatRequest, ChatResponse, ToolCall};

/// Which of the candidates answering one request the loop takes as the
/// answer, and what to record of the choice.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chosen {
    pub index: usize,
    pub notice: Option<String>,
}

/// What the loop lends a strategy for one decision.
pub struct Turn<'t> {
    /// The feature's check after edits and the session's best state (None:
    /// `check_after_edit` is off, or the loop is a subagent's).
    pub edit_check: Option<&'t mut EditCheck>,
    /// The steps taken so far (model calls).
    pub step: u32,
}

/// The conversation starts again from one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Restart {
    /// The message it starts from.
    pub first: String,
    /// Why, for the session's record.
    pub notice: String,
}

/// Files an answer's text writes outside tool calls.
#[derive(Debug, Default)]
pub struct FileWrites {
    /// Each write as a `write_file` call (its id set by the loop), with the
    /// part of the text it was found in.
    pub writes: Vec<(Range<usize>, ToolCall)>,
    /// The files whose block leaves parts out: not written.
    pub elided: Vec<String>,
}

/// What the agent loop asks of a model's strategy. The loop calls these in
/// a fixed order each turn: [`Self::shape`] the request; on the answer,
/// [`Self::answer_cut`] when the harness cut it, [`Self::file_writes`]
/// when it holds no structured call, [`Self::ran_nothing`] when nothing in
/// it runs (when [`Self::candidates`] asks for several answers,
/// [`Self::choose`] first takes one of them); after its calls ran, [`Self::after_calls`]; when the model
/// stops calling tools, [`Self::before_end`] before the check rounds.
pub trait Strategy {
    /// The next request as this strategy sends it: its system prompt,
    /// tools, temperature and stop sequences.
    fn shape(&self, request: &mut ChatRequest);

    /// The harness cut the last answer while it streamed (a runaway).
    fn answer_cut(&mut self);

    /// The files the answer's text writes outside tool calls; `taken`: the
    /// parts already read as tool calls written in the text.
    fn file_writes(&self, text: &str, taken: &[Range<usize>]) -> FileWrites;

    /// After an answer that held nothing to run.
    fn ran_nothing(&mut self, answer: &str, turn: Turn<'_>);

    /// Whether an answer that wrote no file now starts the conversation
    /// again ([`Self::before_end`] does it): a cut answer then gets no
    /// note of its own.
    fn restarts_after_nothing(&self, turn: Turn<'_>) -> bool;

    /// After a turn's calls ran and the check after edits (`changed`: it
    /// ran, the files changed): start again, or None to go on.
    fn after_calls(&mut self, calls: &[ToolCall], changed: bool, turn: Turn<'_>)
        -> Option<Restart>;

    /// The model stopped calling tools: start again, or None for the
    /// check rounds.
    fn before_end(&mut self, turn: Turn<'_>) -> Option<Restart>;

    /// How to change `names` (the files to change, quoted; empty when the
    /// session has none), told to a model that runs its own failing check.
    fn how_to_change(&self, names: &str) -> String;

    /// How to work with the tools, told to a model that called none.
    fn how_to_work(&self) -> &'static str;

    /// How many answers to ask for the next request at once: its
    /// candidates, of which [`Self::choose`] takes one. 1: one answer.
    fn candidates(&self, _turn: Turn<'_>) -> u32 {
        1
    }

    /// Which of the candidates answering one request is the answer, and
    /// what to record of the choice.
    fn choose(&mut self, _answers: &[ChatResponse]) -> Chosen {
        Chosen::default()
    }

    /// Before the first model call: what the harness can do without the
    /// model. Some: the session is done, and what was done.
    fn before_first_turn(
        &mut self,
        _link: &mut WorkerLink,
        _turn: Turn<'_>,
    ) -> anyhow::Result<Option<String>> {
        Ok(None)
    }
}
