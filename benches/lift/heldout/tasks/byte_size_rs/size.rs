//! Sizes in bytes: read from text such as "1.5 KiB", and written back.

pub fn parse_size(text: &str) -> Result<u64, String> {
    unimplemented!("parse_size({text:?})")
}

pub fn format_size(bytes: u64) -> String {
    unimplemented!("format_size({bytes})")
}
