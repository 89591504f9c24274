//! Register hex as people paste it: sysfs (`02544d53...`), with spaces or colons
//! between bytes, with `0x`, or as the 32-bit words that kernel logs and U-Boot
//! print (`0x02544d53 0x41303447 ...`, where a word may lose its leading zeros).

/// Why register hex was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    #[error("'{0}' is not hexadecimal")]
    NotHex(String),
    #[error("{register} is {expected} bytes ({} hex digits); got {got} byte{}", expected * 2, if *got == 1 { "" } else { "s" })]
    WrongLength {
        register: &'static str,
        expected: usize,
        got: usize,
    },
    #[error("odd number of hex digits ({0})")]
    OddDigits(usize),
}

/// Bytes as lower-case hex, two digits each, as sysfs prints a register
/// and as `parse_register` reads it back.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parse register hex into exactly `expected` bytes.
pub fn parse_register(text: &str, register: &'static str, expected: usize) -> Result<Vec<u8>, HexError> {
    let tokens: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || c == ':' || c == ',' || c == '-' || c == '_')
        .filter(|t| !t.is_empty())
        .collect();
    let words = tokens.len() > 1 && tokens.iter().all(|t| has_prefix(t)) && tokens.iter().any(|t| strip(t).len() > 2);
    let mut digits = String::new();
    for token in &tokens {
        let body = strip(token);
        if body.is_empty() || !body.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(HexError::NotHex(token.to_string()));
        }
        if words {
            if body.len() > 8 {
                return Err(HexError::NotHex(token.to_string()));
            }
            digits.push_str(&format!("{body:0>8}"));
        } else {
            digits.push_str(body);
        }
    }
    if !digits.len().is_multiple_of(2) {
        return Err(HexError::OddDigits(digits.len()));
    }
    let bytes: Vec<u8> = (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("checked hex digits"))
        .collect();
    if bytes.len() != expected {
        return Err(HexError::WrongLength {
            register,
            expected,
            got: bytes.len(),
        });
    }
    Ok(bytes)
}

fn has_prefix(token: &str) -> bool {
    token.starts_with("0x") || token.starts_with("0X")
}

fn strip(token: &str) -> &str {
    token
        .strip_prefix("0x")
        .or_else(|| token.strip_prefix("0X"))
        .unwrap_or(token)
}

/// A register of `N` bytes from its hex text, for the decoders' tests.
#[cfg(test)]
pub fn raw<const N: usize>(text: &str, register: &'static str) -> [u8; N] {
    parse_register(text, register, N).unwrap().try_into().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINGSTON_CID: [u8; 16] = [
        0x02, 0x54, 0x4d, 0x53, 0x41, 0x30, 0x34, 0x47, 0x11, 0x35, 0x33, 0x89, 0x09, 0x00, 0xd3, 0x71,
    ];

    #[test]
    fn accepts_the_usual_spellings() {
        for text in [
            "02544d5341303447113533890900d371",
            "0x02544d5341303447113533890900d371",
            "02 54 4d 53 41 30 34 47 11 35 33 89 09 00 d3 71",
            "02:54:4D:53:41:30:34:47:11:35:33:89:09:00:D3:71",
            "0x02544d53 0x41303447 0x11353389 0x0900d371",
            "0x2544d53 0x41303447 0x11353389 0x900d371",
            "  02544d5341303447113533890900d371\n",
        ] {
            assert_eq!(parse_register(text, "CID", 16).unwrap(), KINGSTON_CID, "{text}");
        }
    }

    #[test]
    fn rejects_bad_hex() {
        assert!(matches!(parse_register("zz", "CID", 16), Err(HexError::NotHex(_))));
        assert!(matches!(parse_register("abc", "CID", 16), Err(HexError::OddDigits(3))));
        assert_eq!(
            parse_register("0235800001000000", "CID", 16),
            Err(HexError::WrongLength {
                register: "CID",
                expected: 16,
                got: 8
            })
        );
        assert!(matches!(
            parse_register("", "SCR", 8),
            Err(HexError::WrongLength { got: 0, .. })
        ));
    }
}
