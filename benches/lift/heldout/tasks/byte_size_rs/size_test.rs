use sizes::{format_size, parse_size};

#[test]
fn plain_bytes() {
    assert_eq!(parse_size("512"), Ok(512));
    assert_eq!(parse_size("512B"), Ok(512));
    assert_eq!(parse_size("0 B"), Ok(0));
}

#[test]
fn decimal_units() {
    assert_eq!(parse_size("1KB"), Ok(1_000));
    assert_eq!(parse_size("2 MB"), Ok(2_000_000));
    assert_eq!(parse_size("3GB"), Ok(3_000_000_000));
    assert_eq!(parse_size("1 TB"), Ok(1_000_000_000_000));
}

#[test]
fn binary_units() {
    assert_eq!(parse_size("1KiB"), Ok(1024));
    assert_eq!(parse_size("3 MiB"), Ok(3 * 1024 * 1024));
    assert_eq!(parse_size("1GiB"), Ok(1 << 30));
    assert_eq!(parse_size("2 TiB"), Ok(2 << 40));
}

#[test]
fn units_in_any_case() {
    assert_eq!(parse_size("1kib"), Ok(1024));
    assert_eq!(parse_size("5 mb"), Ok(5_000_000));
    assert_eq!(parse_size("7 b"), Ok(7));
}

#[test]
fn fractions_floored() {
    assert_eq!(parse_size("1.5KiB"), Ok(1536));
    assert_eq!(parse_size("0.5 B"), Ok(0));
    assert_eq!(parse_size("2.0009 KB"), Ok(2000));
}

#[test]
fn surrounding_spaces_ignored() {
    assert_eq!(parse_size("  10 KB  "), Ok(10_000));
}

#[test]
fn malformed_sizes_are_errors() {
    for text in ["", "KB", "-1KB", "1 XB", "1..5KB", "1 K B", "1.5.2", ".", "1e3"] {
        assert!(parse_size(text).is_err(), "{text:?} should be an error");
    }
}

#[test]
fn too_large_is_an_error() {
    assert!(parse_size("20000000 TiB").is_err());
    assert_eq!(parse_size("16000000 TiB"), Ok(16_000_000 << 40));
}

#[test]
fn format_small() {
    assert_eq!(format_size(0), "0 B");
    assert_eq!(format_size(1023), "1023 B");
    assert_eq!(format_size(1024), "1.0 KiB");
    assert_eq!(format_size(1536), "1.5 KiB");
}

#[test]
fn format_large() {
    assert_eq!(format_size(5 * 1024 * 1024), "5.0 MiB");
    assert_eq!(format_size(1 << 30), "1.0 GiB");
    assert_eq!(format_size(2 << 40), "2.0 TiB");
    assert_eq!(format_size(u64::MAX), "16777216.0 TiB");
}
