//! Hostile sessions: a scripted model plays a confused, prompt-injected or
//! malicious worker or initializer, one attack class per module. Every test
//! asserts that nothing got through (main, refs, host paths, transcripts)
//! beside a control where the same session done honestly is accepted.

mod broker;
mod checkout;
mod checks;
mod closure;
mod output;
mod overlay;
mod reading;
mod settings;
mod stall;
mod tripwire;
mod workspace;
