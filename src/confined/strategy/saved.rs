//! The files to change as they are, kept while the harness tries other
//! contents in their place (earlier sessions' work, an attempt's
//! candidates) and put back after.

use std::path::Path;

use crate::fsutil::Beneath;

/// Each file to change with its content (None: absent) and mode.
pub struct Saved<'n> {
    files: Vec<(&'n String, Option<Vec<u8>>, u32)>,
}

impl<'n> Saved<'n> {
    /// `files` under `tree` (the workspace) as they are; None when one
    /// cannot be read (a symlink, a directory).
    pub fn take(tree: &Beneath, workspace: &Path, files: &'n [String]) -> Option<Saved<'n>> {
        let mut saved = Vec::new();
        for name in files {
            let body = tree.read(Path::new(name)).ok()?;
            let mode = std::fs::symlink_metadata(workspace.join(name)).map_or(0o644, |m| {
                std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777
            });
            saved.push((name, body, mode));
        }
        Some(Saved { files: saved })
    }

    /// The mode to write `path` with: its own, else that of a new file.
    pub fn mode_of(&self, path: &str) -> u32 {
        self.files
            .iter()
            .find(|f| f.0 == path)
            .map_or(0o644, |f| f.2)
    }

    /// Every file as it was taken.
    pub fn put_back(&self, tree: &Beneath) -> anyhow::Result<()> {
        for (name, body, mode) in &self.files {
            match body {
                Some(body) => tree.write(Path::new(name), body, *mode)?,
                None => tree.remove_file(Path::new(name))?,
            }
        }
        Ok(())
    }
}
