//! A verdict on a tool call: allow, ask or deny, and the rule that gave it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a rule says about a call. Ordered from the most permissive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    Allow,
    Ask,
    Deny,
}

impl Permission {
    /// `longrun check-command`'s exit status: 0 allow, 1 ask, 2 deny.
    pub fn exit_code(self) -> u8 {
        match self {
            Permission::Allow => 0,
            Permission::Ask => 1,
            Permission::Deny => 2,
        }
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Permission::Allow => "allow",
            Permission::Ask => "ask",
            Permission::Deny => "deny",
        })
    }
}

/// A verdict and the rule that gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub verdict: Permission,
    /// The deciding rule, e.g. `built-in deny bash "curl *"`.
    pub rule: String,
    /// Why, with the command or path it was about.
    pub reason: String,
}
