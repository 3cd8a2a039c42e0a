//! The messages of the whole-file strategy: the system prompts of its
//! attempts, the message an attempt starts from, and the one a refocus
//! starts from. Each says what it leaves out and the measurement why.

use std::path::Path;

use crate::confined::edit_check::BestFiles;
use crate::confined::prompt::{
    agents_md, block_form, named_files, named_files_as, Shown, READ_ONLY_SUFFIX, TO_CHANGE_HEADING,
};
use crate::confined::test_imports;
use crate::protocol::WorkerConfig;

/// The system prompts of a whole-file session's attempts.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptSystem {
    /// The first attempt's: only the repo's AGENTS.md and CLAUDE.md (often
    /// nothing, and then the request has no system message and the model
    /// gets its chat template's own). The first attempt is sampled at the
    /// session's temperature, so it is the one answer a bare request would
    /// get, plus what the check says: replayed at temperature 0, the first
    /// requests of six lift sessions (three tasks, the 0.5B and 1.5B Qwen
    /// coders) passed as many tests or more without longrun's role line in
    /// all six, and more in three (0.5B wordfreq 4 of 8 against 0, 1.5B
    /// slugify_js 7 of 9 against 4).
    pub first: String,
    /// The later attempts': what to answer, and the repo's AGENTS.md and
    /// CLAUDE.md. The worker's template, its tools and its workflow are left
    /// out: in an attempt the harness writes the files, runs the check and
    /// commits, and a small model answers better the less there is besides
    /// the task. Sampled at the retry temperature, the 1.5B model's answers
    /// passed more tests with this line than without it (37 against 23 over
    /// nine replayed samples).
    pub later: String,
}

/// [`AttemptSystem`] for a session. `files`: the session's [`files_to_change`](crate::confined::files_to_change::files_to_change).
pub fn attempt_system_prompts(
    config: &WorkerConfig,
    workspace: &Path,
    files: &[String],
) -> AttemptSystem {
    let agents = agents_md(workspace, config.harness.agents_md_bytes);
    let later = format!(
        "You write code for a software project. Each message gives you one feature, \
         the files it names as they are, and what the feature's check says. Reply with the complete new content of \
         each file you change, {}. Write whole files, never leaving parts out. No commands and no tool calls: the harness writes the files, \
         runs the check and commits.\n{agents}",
        block_form(files)
    );
    AttemptSystem {
        first: agents.trim_start().to_string(),
        later,
    }
}

/// The message a whole-file session starts again from when its model keeps
/// changing nothing (running the failing check again, committing nothing):
/// the assignment, the files as they are now, what the check says, and one
/// thing to do. None without a feature or a file to write.
/// `files`: the session's [`files_to_change`](crate::confined::files_to_change::files_to_change).
pub fn refocus_message(
    config: &WorkerConfig,
    workspace: &Path,
    files: &[String],
    failing: &str,
) -> Option<String> {
    let feature = config.feature.as_ref()?;
    if files.is_empty() {
        return None;
    }
    let names = quoted(files);
    let files_now = named_files(config, feature, workspace, files);
    Some(format!(
        "[harness] Starting again from here: your last turns changed no file, and only new code will change the check's result.\n\n\
         Your feature `{id}`: {description}\n\n{files_now}\
         Its check `{check}` {failing}\n\n\
         Reply now with the complete new {names}: one fenced code block per file, the file's path alone on the line before it. \
         Write the whole file, no tool call and no command: the harness writes it and runs the check.",
        id = feature.id,
        description = description_shown(feature, &files_now),
        check = feature.check.as_deref().unwrap_or(""),
    ))
}

/// The files the feature names, for [`attempt_message`] (empty without a
/// feature): the files to change (`files`, the session's
/// [`files_to_change`](crate::confined::files_to_change::files_to_change)) as `shown` says.
pub fn files_for_attempt(
    config: &WorkerConfig,
    workspace: &Path,
    files: &[String],
    shown: &Shown,
) -> String {
    config
        .feature
        .as_ref()
        .map(|f| named_files_as(config, f, workspace, files, shown))
        .unwrap_or_default()
}

/// What an attempt is shown and asked ([`attempt_message`]).
#[derive(Debug, Clone, Copy)]
pub enum AttemptKind<'b> {
    /// The session's first: the files as found.
    First,
    /// The files to change left out, written from scratch.
    Anew,
    /// The files as found, to be written another way.
    AsFound,
    /// The state the attempt builds on ([`EditCheck::best_to_build_on`](crate::confined::edit_check::EditCheck::best_to_build_on)).
    Builds(&'b BestFiles),
    /// The best state so far, to repair ([`EditCheck::best_to_repair`](crate::confined::edit_check::EditCheck::best_to_repair)).
    Repairs,
}

/// The message a whole-file session's attempt `attempt` starts from: the
/// assignment, the files as the session found them (not the last attempt:
/// shown its own file, a small model writes it again), what the check says,
/// and the one thing to do. Attempt 1 is the session's first message when
/// the check fails at the start (a small model given the usual first
/// message spends its first turns running the check the harness already
/// ran); a later one says what the best attempt so far failed and asks for
/// a different file. None without a feature or a file to write.
/// An attempt that is not written anew may build on a state of this
/// session (`kind`: [`AttemptKind::Builds`]): one that makes other
/// features' checks pass, or one whose own check passes but breaks others;
/// it is shown in place of the files as found and the attempt is asked to
/// mend what fails there.
/// `at_start`: [`files_for_attempt`]; `files`: the session's [`files_to_change`](crate::confined::files_to_change::files_to_change);
/// `failing`: what the check says on the files shown (written anew: on the
/// best attempt so far).
pub fn attempt_message(
    config: &WorkerConfig,
    at_start: &str,
    files: &[String],
    failing: &str,
    attempt: u32,
    kind: AttemptKind,
) -> Option<String> {
    let feature = config.feature.as_ref()?;
    if files.is_empty() {
        return None;
    }
    let names = quoted(files);
    let check = feature.check.as_deref().unwrap_or("");
    let (said, asked) = match kind {
        AttemptKind::Builds(best) => builds_on(best, check, failing),
        AttemptKind::Repairs => (
            format!(
                "The best attempt so far is shown above under \"{TO_CHANGE_HEADING}\". Its check `{check}` on it: {failing}"
            ),
            "Change it so that the failing tests pass too, keeping every test that passes now passing."
                .to_string(),
        ),
        AttemptKind::First => (
            format!("Its check `{check}` fails now: {failing}"),
            format!("Write {names} so that every test passes."),
        ),
        AttemptKind::Anew => (
            format!(
                "An earlier attempt at {names} failed. Its check `{check}`, on the best attempt so far: {failing}"
            ),
            format!(
                "Write {names} anew, from scratch, so that every test passes (the ones that pass now too): \
                 a different approach from the earlier attempts."
            ),
        ),
        // The files as the session found them, and what their check says.
        AttemptKind::AsFound => (
            format!(
                "An earlier attempt at {names} failed. Its check `{check}` fails on {names} as shown above: {failing}"
            ),
            format!(
                "Write a new {names} that makes every test pass, taking a different approach from the earlier attempts."
            ),
        ),
    };
    // The later attempts, sampled hotter, start without the `[harness]`
    // mark: the 1.5B model began half of such answers by writing it out
    // again (replayed: 16 of 32, none of 32 without it), and the answer
    // ended at once on the stop sequence, an attempt spent. The first
    // keeps the message as it was measured at temperature 0.
    let mark = if attempt == 1 { "[harness] " } else { "" };
    // What stays the same from one attempt to the next comes first, so a
    // server's prompt cache serves it (about 1,000 tokens of a small task;
    // 30 s each time at 35 tokens/s on two cores).
    Some(format!(
        "{mark}Your feature `{id}`: {description}\n\n{at_start}Attempt {attempt}. {said}\n\n{asked} \
         Reply with the complete new {names}: one fenced code block per file, the file's path alone on the line before it. \
         The harness writes it, runs the check and keeps the best attempt.",
        id = feature.id,
        description = description_shown(feature, at_start),
    ))
}

/// What an attempt building on `best` is told of it and asked: make its
/// own check pass, mend the features it breaks, or both, keeping the rest.
fn builds_on(best: &BestFiles, check: &str, failing: &str) -> (String, String) {
    let shown = format!("The best attempt so far, shown above under \"{TO_CHANGE_HEADING}\",");
    let gained = best.gained.join(", ");
    let broken = best.broken.join(", ");
    match (best.own_passes, best.gained.is_empty()) {
        // Its own check passes: what it says names what broke.
        (true, true) => (
            format!("{shown} makes this feature's check `{check}` pass: {failing}"),
            format!(
                "Change it so that {broken} pass again, keeping this feature's test and every test that passes now passing."
            ),
        ),
        (true, false) => (
            format!(
                "{shown} makes this feature's check `{check}` pass and the checks of other features that failed before ({gained}): {failing}"
            ),
            format!(
                "Change it so that {broken} pass again, keeping this feature's test and every test that passes now passing."
            ),
        ),
        (false, _) if !best.broken.is_empty() => (
            format!(
                "{shown} makes the checks of other features pass that failed before ({gained}), but its own check `{check}` fails: {failing}\n\
                 It also breaks features that passed before: {broken}."
            ),
            format!(
                "Change it so that this feature's test passes too and {broken} pass again, keeping every test that passes now passing."
            ),
        ),
        (false, _) => (
            format!(
                "{shown} makes the checks of other features pass that failed before ({gained}), but its own check `{check}` fails: {failing}"
            ),
            "Change it so that this feature's test passes too, keeping every test that passes now passing."
                .to_string(),
        ),
    }
}

/// `a`, `b`: file names as the messages name them.
fn quoted(files: &[String]) -> String {
    files
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The feature's description, or its whole JSON when it has none.
fn description(feature: &crate::protocol::FeatureBrief) -> String {
    serde_json::from_str::<serde_json::Value>(&feature.json)
        .ok()
        .and_then(|v| v["description"].as_str().map(str::to_string))
        .unwrap_or_else(|| feature.json.clone())
}

/// The feature as a whole-file message names it: when `files` (what the
/// message shows) holds a test, the first sentence of its description
/// only. The tests say exactly what is expected; the prose repeats their
/// rules, and a small model writes code for the prose. Replayed on the
/// lift run's parse_duration messages (Qwen2.5-Coder-1.5B, temperature
/// 0.8, eight samples each), the first attempt at `test_seconds` passed it
/// in 3 of 8 answers named by the first sentence and 0 of 6 by the whole
/// description (which asked for the order and repetition errors first: the
/// answers parsed character by character); written anew for
/// `test_combined`, the answers passed 5.0 tests of 13 on average against
/// 3.1. At temperature 0 the first answer passed 7 against 2.
fn description_shown(feature: &crate::protocol::FeatureBrief, files: &str) -> String {
    let whole = description(feature);
    match tests_shown(files) {
        true => first_sentence(&whole).to_string(),
        false => whole,
    }
}

/// Whether a message's files ([`named_files_as`]) show a test among the
/// files for reference.
fn tests_shown(files: &str) -> bool {
    files.lines().any(|line| {
        line.strip_suffix(READ_ONLY_SUFFIX)
            .and_then(|l| l.strip_prefix('`'))
            .is_some_and(test_imports::looks_like_test)
    })
}

/// The text up to the end of its first sentence: a period, question or
/// exclamation mark followed by white space, not ending an abbreviation
/// ("e.g.", "etc."); the whole text when it is one sentence. A sentence
/// of fewer than [`SENTENCE_WORDS`] words is a heading ("Overview.",
/// "Roman numerals."), which names no work: the next one is taken with it
/// ("Greet people by name." is a sentence).
fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        let next = bytes.get(i + 1);
        if !next.is_some_and(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let word = text[..i].rsplit(char::is_whitespace).next().unwrap_or("");
        let abbreviation = c == '.'
            && matches!(
                word.trim_start_matches('(').to_lowercase().as_str(),
                "etc" | "vs" | "cf" | "e.g" | "i.e" | "eg" | "ie"
            );
        let sentence = &text[..=i];
        if !abbreviation && sentence.split_whitespace().count() >= SENTENCE_WORDS {
            return sentence;
        }
    }
    text
}

/// The fewest words [`first_sentence`] takes for a sentence.
const SENTENCE_WORDS: usize = 3;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::confined::prompt::READ_ONLY_HEADING;

    #[test]
    fn the_first_sentence_ends_at_a_stop_followed_by_white_space_not_an_abbreviation() {
        let parse =
            "Implement parse_duration(text) in duration.py: parse a duration such as \"1h30m\" \
                     into whole seconds. Units are d, h, m and s; \"1.5h\" is 5400.";
        assert_eq!(
            first_sentence(parse),
            "Implement parse_duration(text) in duration.py: parse a duration such as \"1h30m\" into whole seconds."
        );
        assert_eq!(
            first_sentence("Sort the list, e.g. by name, etc. and by date. Then print it."),
            "Sort the list, e.g. by name, etc. and by date."
        );
        assert_eq!(first_sentence("Does it parse? Yes."), "Does it parse?");
        assert_eq!(
            first_sentence("  One sentence, version 1.5 only  "),
            "One sentence, version 1.5 only"
        );
        assert_eq!(first_sentence(""), "");
    }

    #[test]
    fn a_heading_is_not_the_first_sentence_the_next_one_comes_with_it() {
        assert_eq!(
            first_sentence(
                "Overview. Parse a duration such as 1h30m into seconds. Units are d, h, m and s."
            ),
            "Overview. Parse a duration such as 1h30m into seconds."
        );
        assert_eq!(
            first_sentence(
                "Roman numerals! Convert both ways, from 1 to 3999. Raise ValueError otherwise."
            ),
            "Roman numerals! Convert both ways, from 1 to 3999."
        );
        assert_eq!(
            first_sentence("Short. Also short. More."),
            "Short. Also short."
        );
        assert_eq!(
            first_sentence("Greet people by name. Say hello."),
            "Greet people by name."
        );
    }

    #[test]
    fn a_whole_file_message_names_the_feature_by_its_first_sentence_only_when_it_shows_a_test() {
        let feature = crate::protocol::FeatureBrief {
            id: "F001".into(),
            description: String::new(),
            json: serde_json::json!({"description": "Implement slugify in slug.py. Lower case; runs of other characters become one '-'."})
                .to_string(),
            check: Some("python3 -m unittest test_slug".into()),
        };
        let with_test = format!("{READ_ONLY_HEADING}\n\n`tests/test_slug.py`, read-only:\n```\nimport slug\n```\n\n{TO_CHANGE_HEADING}\n\nslug.py\n```\n```\n");
        assert_eq!(
            description_shown(&feature, &with_test),
            "Implement slugify in slug.py."
        );
        // A file for reference that is no test, or no file at all: the whole description.
        let without =
            format!("{READ_ONLY_HEADING}\n\n`README.md`, read-only:\n```\nslugs\n```\n\n");
        for files in [without.as_str(), ""] {
            assert_eq!(
                description_shown(&feature, files),
                "Implement slugify in slug.py. Lower case; runs of other characters become one '-'."
            );
        }
    }
}
