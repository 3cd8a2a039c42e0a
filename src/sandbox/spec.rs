//! What a confined process may touch, and how to start one.
//!
//! A workspace is either a plain directory, or (with [`Layers`]) an overlay
//! the sandbox mounts at the workspace path before anything else: the
//! orchestrator's cached checkout of a commit as the read-only lower layer,
//! and a directory of the session's own as the upper layer that takes every
//! write. The orchestrator then writes only what differs from the lower
//! layer, and removes only what was written.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Profile;

/// Everything confinement needs to know, serialized to the child.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// The resolved profile: network, Landlock mode, toolchain paths, limits.
    pub profile: Profile,
    /// The one writable project directory.
    pub workspace: PathBuf,
    /// Private TMPDIR.
    pub tmp: PathBuf,
    /// Private HOME.
    pub home: PathBuf,
    /// Extra read-only paths (the main repo, for instance).
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// Extra writable paths.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// Paths inside the workspace that stay read-only (the frozen acceptance
    /// tests and the protected files), bound over the writable workspace.
    #[serde(default)]
    pub read_only_inside: Vec<PathBuf>,
    /// The workspace is a verification checkout whose unchanged files are
    /// hard links into the orchestrator's cached checkout of main: every
    /// regular file in it with more than one link is bound read-only onto
    /// itself, and a sandbox that cannot do so refuses to start, so that
    /// nothing confined can change the cached copy through its link.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only_links: bool,
    /// The workspace is an overlay of these layers, mounted at its path
    /// before the binds and Landlock, so that every rule naming the
    /// workspace applies to the merged view. A sandbox that cannot mount it
    /// refuses to start: the workspace alone holds only what differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Layers>,
    /// Descriptors kept open besides stdio (the broker socket).
    #[serde(default)]
    pub keep_fds: Vec<i32>,
}

/// The layers of an overlay workspace. Overlayfs never writes a lower
/// layer: a change to a lower file is a copy in `upper`, a removal a
/// whiteout there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layers {
    /// The read-only layers, the topmost first; the last is a cached
    /// checkout that only the orchestrator writes, and never while a
    /// sandbox may have it mounted.
    pub lower: Vec<PathBuf>,
    /// Where the writes land: the workspace directory itself, or a
    /// directory of one step's own.
    pub upper: PathBuf,
    /// Overlayfs's scratch directory, on the same filesystem as `upper`.
    pub work: PathBuf,
}

impl SandboxSpec {
    /// A workspace, tmp and home under `profile`, and nothing else: no
    /// extra paths, no layers, no descriptors kept.
    pub fn new(profile: Profile, workspace: PathBuf, tmp: PathBuf, home: PathBuf) -> SandboxSpec {
        SandboxSpec {
            profile,
            workspace,
            tmp,
            home,
            read_only: Vec::new(),
            writable: Vec::new(),
            read_only_inside: Vec::new(),
            read_only_links: false,
            layers: None,
            keep_fds: Vec::new(),
        }
    }

    /// What it may read and execute besides the system: the toolchain
    /// directories and the extra read-only paths (the main repo).
    pub fn read_only_paths(&self) -> Vec<PathBuf> {
        let mut paths = self.profile.filesystem.read_only.clone();
        paths.extend(self.read_only.iter().cloned());
        paths
    }

    /// What it may write: the workspace, private tmp and home, /dev/shm
    /// (POSIX semaphores, which Python multiprocessing needs), and the extra
    /// writable paths. Landlock grants these and the mounts bind them back.
    pub fn writable_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![
            self.workspace.clone(),
            self.tmp.clone(),
            self.home.clone(),
            PathBuf::from("/dev/shm"),
        ];
        paths.extend(self.profile.filesystem.writable.iter().cloned());
        paths.extend(self.writable.iter().cloned());
        paths
    }
}
