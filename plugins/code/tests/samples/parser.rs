use std::str::FromStr;

/// A parsed version number.
pub struct Version {
    major: u32,
}

impl Version {
    /// Reads "3" as Version { major: 3 }.
    pub fn parse(text: &str) -> Option<Version> {
        u32::from_str(text).ok().map(|major| Version { major })
    }
}

fn main() {
    println!("{:?}", Version::parse("3").map(|v| v.major));
}
