//! Sizes in bytes: read from text such as "1.5 KiB", and written back.

const UNITS: [(&str, u64); 9] = [
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
];

pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit = unit.trim_start().to_ascii_lowercase();
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return Err(format!("no number in {text:?}"));
    }
    let factor = if unit.is_empty() {
        1
    } else {
        UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|(_, f)| *f)
            .ok_or_else(|| format!("unknown unit {unit:?}"))?
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    let whole: u128 = if whole.is_empty() { 0 } else { whole.parse().map_err(|e| format!("{e}"))? };
    let mut bytes = whole * factor as u128;
    if !frac.is_empty() {
        let digits: u128 = frac.parse().map_err(|e| format!("{e}"))?;
        bytes += digits * factor as u128 / 10u128.pow(frac.len() as u32);
    }
    u64::try_from(bytes).map_err(|_| format!("{text:?} is more than u64::MAX bytes"))
}

pub fn format_size(bytes: u64) -> String {
    let names = ["KiB", "MiB", "GiB", "TiB"];
    let mut unit = None;
    for (i, name) in names.iter().enumerate() {
        if bytes >= 1u64 << (10 * (i + 1)) {
            unit = Some((*name, 1u64 << (10 * (i + 1))));
        }
    }
    match unit {
        None => format!("{bytes} B"),
        Some((name, size)) => format!("{:.1} {name}", bytes as f64 / size as f64),
    }
}
