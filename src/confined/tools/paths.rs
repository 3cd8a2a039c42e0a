//! Turning a path argument into a path inside the workspace, or refusing it.
//!
//! A path is taken relative to the workspace; an absolute path is accepted
//! only when it already lies inside. `..` that climbs out, `~`, and symlinks
//! that point outside are refused with an error that says what to send
//! instead. The check follows the symlinks of the deepest part of the path
//! that exists, so a file written through a linked directory cannot land
//! outside either.

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};

/// The places a tool may touch: the workspace, and for reading, extra roots
/// (the session tmp where cut outputs are saved).
pub struct Roots<'a> {
    pub workspace: &'a Path,
    pub extra: &'a [&'a Path],
}

/// Resolve `raw` (the value of argument `arg`) to a path inside one of `roots`.
pub fn resolve(roots: &Roots<'_>, arg: &str, raw: &str) -> anyhow::Result<PathBuf> {
    if raw.trim().is_empty() {
        bail!("argument `{arg}` is empty; give a path relative to the workspace, such as `src/main.rs`");
    }
    if raw == "~" || raw.starts_with("~/") {
        bail!("{} is outside the workspace; {}", quote(raw), HINT);
    }
    let workspace = canonical_root(roots.workspace)?;
    let joined = if Path::new(raw).is_absolute() {
        PathBuf::from(raw)
    } else {
        workspace.join(raw)
    };
    let Some(lexical) = normalize(&joined) else {
        bail!("{} is outside the workspace; {}", quote(raw), HINT);
    };
    let mut allowed = vec![workspace];
    for extra in roots.extra {
        if let Ok(p) = extra.canonicalize() {
            allowed.push(p);
        }
    }
    let Some(root) = allowed.iter().find(|r| lexical.starts_with(r)) else {
        bail!("{} is outside the workspace; {}", quote(raw), HINT);
    };
    if !real_location(&lexical)?.starts_with(root) {
        bail!(
            "{} leads outside the workspace through a symbolic link; {}",
            quote(raw),
            HINT
        );
    }
    Ok(lexical)
}

const HINT: &str = "use a path relative to the workspace root, such as `src/main.rs`";

fn quote(raw: &str) -> String {
    format!("`{raw}`")
}

fn canonical_root(root: &Path) -> anyhow::Result<PathBuf> {
    root.canonicalize()
        .with_context(|| format!("the workspace {} is not accessible", root.display()))
}

/// `.` and `..` folded away without touching the file system; `None` when `..` climbs past `/`.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    Some(out)
}

/// Where `path` really is: its deepest existing ancestor with symlinks
/// followed, plus the part that does not exist yet. A dangling symlink is
/// refused, since writing through it would create its target wherever it points.
fn real_location(path: &Path) -> anyhow::Result<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        match std::fs::symlink_metadata(&existing) {
            Ok(meta) => {
                let real = match existing.canonicalize() {
                    Ok(real) => real,
                    Err(_) if meta.file_type().is_symlink() => {
                        bail!(
                            "`{}` is a symbolic link to a missing target; remove it or use another path",
                            existing.display()
                        )
                    }
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("cannot resolve {}", existing.display()))
                    }
                };
                return Ok(rest.iter().rev().fold(real, |p, c| p.join(c)));
            }
            Err(_) => {
                let Some(name) = existing.file_name().map(|n| n.to_os_string()) else {
                    return Ok(path.to_path_buf());
                };
                rest.push(name);
                if !existing.pop() {
                    return Ok(path.to_path_buf());
                }
            }
        }
    }
}

/// `path` shown relative to the workspace, as the model wrote it.
pub fn display(workspace: &Path, path: &Path) -> String {
    let base = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    match path.strip_prefix(&base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        (dir, ws)
    }

    fn try_resolve(ws: &Path, raw: &str) -> Result<String, String> {
        let roots = Roots {
            workspace: ws,
            extra: &[],
        };
        resolve(&roots, "path", raw)
            .map(|p| display(ws, &p))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn relative_and_inner_absolute_paths_resolve_inside() {
        let (_d, ws) = setup();
        assert_eq!(try_resolve(&ws, "src/a.rs").unwrap(), "src/a.rs");
        assert_eq!(try_resolve(&ws, "./src/../b.txt").unwrap(), "b.txt");
        assert_eq!(try_resolve(&ws, "new/dir/c.txt").unwrap(), "new/dir/c.txt");
        let abs = ws.canonicalize().unwrap().join("src/a.rs");
        assert_eq!(try_resolve(&ws, abs.to_str().unwrap()).unwrap(), "src/a.rs");
        assert_eq!(try_resolve(&ws, ".").unwrap(), ".");
    }

    #[test]
    fn escaping_paths_are_refused() {
        let (_d, ws) = setup();
        for raw in ["../x", "src/../../x", "/etc/passwd", "~/.bashrc", "~", "/"] {
            let err = try_resolve(&ws, raw).unwrap_err();
            assert!(err.contains("outside the workspace"), "{raw}: {err}");
        }
        assert!(try_resolve(&ws, " ").unwrap_err().contains("is empty"));
    }

    #[test]
    fn symlinks_pointing_out_are_refused() {
        let (d, ws) = setup();
        let outside = d.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere"), ws.join("dangling")).unwrap();
        std::os::unix::fs::symlink(ws.join("src"), ws.join("inner")).unwrap();
        let err = try_resolve(&ws, "link/file.txt").unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
        assert!(try_resolve(&ws, "dangling")
            .unwrap_err()
            .contains("missing target"));
        assert_eq!(try_resolve(&ws, "inner/x.rs").unwrap(), "inner/x.rs");
    }

    #[test]
    fn extra_roots_are_readable() {
        let (d, ws) = setup();
        let tmp = d.path().join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::write(tmp.join("out.txt"), "x").unwrap();
        let roots = Roots {
            workspace: &ws,
            extra: &[&tmp],
        };
        let p = tmp.canonicalize().unwrap().join("out.txt");
        assert!(resolve(&roots, "path", p.to_str().unwrap()).is_ok());
    }
}
