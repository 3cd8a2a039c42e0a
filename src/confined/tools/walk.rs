//! Walking a part of the workspace the way git sees it, for list_files and grep.
//!
//! `.gitignore` (and `.ignore`) files are honoured whether or not the
//! workspace is a git repository; hidden files are listed, `.git` is not.

use std::path::{Path, PathBuf};

use anyhow::Context;
use globset::{GlobBuilder, GlobMatcher};

/// A file-name filter from a glob such as `*.rs` or `src/**/*.ts`.
pub struct NameFilter {
    matcher: GlobMatcher,
    /// A glob without `/` matches the file name; one with `/` the path below the start.
    whole_path: bool,
}

impl NameFilter {
    pub fn new(arg: &str, glob: &str) -> anyhow::Result<NameFilter> {
        let whole_path = glob.contains('/');
        let matcher = GlobBuilder::new(glob.trim_start_matches("./"))
            .literal_separator(whole_path)
            .build()
            .with_context(|| format!("argument `{arg}` is not a valid glob (`{glob}`); use forms like `*.rs` or `src/**/*.ts`"))?
            .compile_matcher();
        Ok(NameFilter {
            matcher,
            whole_path,
        })
    }

    fn matches(&self, start: &Path, path: &Path) -> bool {
        if self.whole_path {
            path.strip_prefix(start)
                .map(|rel| self.matcher.is_match(rel))
                .unwrap_or(false)
        } else {
            path.file_name()
                .map(|n| self.matcher.is_match(n))
                .unwrap_or(false)
        }
    }
}

/// The files under `start` (or `start` itself when it is a file), sorted,
/// that pass `filter`. Stops after `limit` and reports whether there were more.
pub fn files(start: &Path, filter: Option<&NameFilter>, limit: usize) -> (Vec<PathBuf>, bool) {
    if start.is_file() {
        return (vec![start.to_path_buf()], false);
    }
    let walker = ignore::WalkBuilder::new(start)
        .hidden(false)
        .require_git(false)
        .git_global(false)
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    let mut out = Vec::new();
    for entry in walker.filter_map(Result::ok) {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if filter.is_some_and(|f| !f.matches(start, entry.path())) {
            continue;
        }
        if out.len() == limit {
            return (out, true);
        }
        out.push(entry.into_path());
    }
    (out, false)
}
