//! One line for the model when a tool was denied by the sandbox, naming the
//! profile and what it allows, so that it stops retrying what cannot work.

use super::{Network, Profile};

/// Words in a tool's output that say EACCES, EPERM or EROFS (everything
/// outside the writable paths is a read-only mount).
const DENIALS: &[&str] = &[
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "os error 13",
    "os error 1)",
    "os error 30",
    "EACCES",
    "EPERM",
    "EROFS",
];

/// Words in a tool's output that say EXDEV: in an overlay workspace, a
/// directory that came with the checkout cannot be renamed in place
/// (overlayfs without redirects, the only kind a user namespace may mount).
const CROSS_DEVICE: &[&str] = &["Invalid cross-device link", "os error 18", "EXDEV"];

/// The hint to add to a failed tool result whose `output` reports EACCES,
/// EPERM or EXDEV, for a session confined by `profile`; None when it
/// reports none of them.
pub fn denial_hint(profile: &Profile, output: &str) -> Option<String> {
    if CROSS_DEVICE.iter().any(|d| output.contains(d)) {
        return Some(
            "[sandbox: the workspace is an overlay on the project's checkout, and a directory that came with \
             the checkout cannot be renamed in place (EXDEV). `mv` copies instead; otherwise copy and remove \
             (`cp -a OLD NEW && rm -r OLD`), then `git add -A`.]"
                .to_string(),
        );
    }
    if !DENIALS.iter().any(|d| output.contains(d)) {
        return None;
    }
    let network = match profile.network {
        Network::None => " No network in this profile.",
        Network::Loopback => " Only loopback (localhost) networking in this profile.",
        Network::Registries => {
            " Only loopback and the package registries (through $HTTPS_PROXY) in this profile."
        }
        Network::Host => "",
    };
    Some(format!(
        "[sandbox: profile {} ({}). Writes are allowed only under the workspace, $TMPDIR and $HOME; \
         reads only in the system directories, the profile's toolchain directories and the project.{network}]",
        profile.name, profile.description
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_profile_and_what_it_allows() {
        let p = Profile::bundled("default").unwrap();
        let hint = denial_hint(&p, "touch: cannot touch '/etc/x': Permission denied").unwrap();
        assert!(hint.contains("profile default"), "{hint}");
        assert!(
            hint.contains("$TMPDIR") && hint.contains("No network"),
            "{hint}"
        );
        assert_eq!(denial_hint(&p, "error: no such file"), None);
        let moved = denial_hint(
            &p,
            "fatal: renaming 'src' failed: Invalid cross-device link",
        )
        .unwrap();
        assert!(moved.contains("cp -a OLD NEW && rm -r OLD"), "{moved}");
        let lo = Profile::bundled("loopback").unwrap();
        let hint = denial_hint(&lo, "connect: Operation not permitted").unwrap();
        assert!(hint.contains("loopback"), "{hint}");
    }
}
