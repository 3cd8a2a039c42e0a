//! How the whole-file strategy reads an answer: the fenced blocks that
//! write the session's files ([`crate::confined::text_edits`] finds them),
//! as `write_file` calls under the same permissions as any other.

use std::ops::Range;
use std::path::Path;

use super::seam::FileWrites;
use crate::confined::text_edits::{self, FileBlock};
use crate::model::ToolCall;

/// The files a whole-file session writes, and where.
pub struct Blocks<'a> {
    pub workspace: &'a Path,
    /// The session's files to change ([`crate::confined::files_to_change::files_to_change`]).
    pub files: &'a [String],
}

impl Blocks<'_> {
    /// The blocks of `text` that change a file, as write calls (skipping
    /// those inside `taken`, the calls written in the text); when there are
    /// none at all, the files to change written in blocks not headed by
    /// their path ([`Self::unheaded`]).
    pub fn writes(&self, text: &str, taken: &[Range<usize>]) -> FileWrites {
        let mut found = FileWrites::default();
        for mut b in text_edits::file_blocks(text) {
            if taken.iter().any(|span| overlaps(span, &b.span)) {
                continue;
            }
            b.path = self.file_to_change(b.path);
            self.add(&mut found, b);
        }
        // Asked for its one file, a small model often writes the code
        // without the path line: a block in that file's language is that
        // file. Nor do small models always head a block the usual way: in
        // the lift runs of 2026-12-02/03, 192 of 842 answers held code and
        // wrote no file; 127 of them are read by these forms
        // (benches/lift/RESULTS.md, "From the runs' transcripts").
        if taken.is_empty() && found.writes.is_empty() && found.elided.is_empty() {
            for b in self.unheaded(text) {
                self.add(&mut found, b);
            }
        }
        found
    }

    /// `b` as a write, unless it leaves parts out (elided) or is the file as it is.
    fn add(&self, found: &mut FileWrites, b: FileBlock) {
        if b.elided {
            found.elided.push(b.path);
            return;
        }
        if self.unchanged(&b.path, &b.content) {
            return;
        }
        let args = serde_json::json!({"path": b.path, "content": b.content});
        let call = ToolCall {
            id: String::new(),
            name: "write_file".to_string(),
            arguments: args.to_string(),
        };
        found.writes.push((b.span, call));
    }

    /// Whether `answer` holds a block of a file as it is now (which writes
    /// nothing, so no call shows it).
    pub fn holds_unchanged(&self, answer: &str) -> bool {
        let mut blocks = text_edits::file_blocks(answer)
            .into_iter()
            .map(|b| (self.file_to_change(b.path), b.content))
            .collect::<Vec<_>>();
        if blocks.is_empty() {
            blocks.extend(
                self.unheaded(answer)
                    .into_iter()
                    .map(|b| (b.path, b.content)),
            );
        }
        blocks
            .iter()
            .any(|(path, content)| self.unchanged(path, content))
    }

    fn unchanged(&self, path: &str, content: &str) -> bool {
        std::fs::read(self.workspace.join(path)).is_ok_and(|now| now == content.as_bytes())
    }

    /// A block's path as the session's file to change when it is none of
    /// them and no file of the workspace, but ends in the file name of
    /// exactly one of them (`path/to/roman.py` for `roman.py`: the 1.5B
    /// model headed its answers so when the prompt showed a made-up path).
    fn file_to_change(&self, path: String) -> String {
        if self.files.contains(&path) || self.workspace.join(&path).exists() {
            return path;
        }
        let name = Path::new(&path).file_name();
        let mut same = self
            .files
            .iter()
            .filter(|f| Path::new(f).file_name() == name);
        match (same.next(), same.next()) {
            (Some(file), None) => file.clone(),
            _ => path,
        }
    }

    /// The files to change written in blocks not headed by their path, for
    /// an answer with no headed block: the one file's block in its language
    /// ([`text_edits::unnamed_block_for`]), else the looser forms of
    /// [`text_edits::loose_blocks`].
    fn unheaded(&self, text: &str) -> Vec<FileBlock> {
        if let [file] = self.files {
            if let Some(b) = text_edits::unnamed_block_for(text, file) {
                return vec![b];
            }
        }
        text_edits::loose_blocks(text, self.files)
    }
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}
