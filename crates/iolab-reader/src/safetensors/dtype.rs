//! The element types a safetensors header may name, with their sizes in
//! bits (the sub-byte float formats pack several elements per byte).

use std::fmt;

/// A tensor's element type, as safetensors spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)] // the names are the format's own
pub enum Dtype {
    /// Boolean, one byte.
    BOOL,
    /// 4-bit float (E2M1), two per byte.
    F4,
    /// 6-bit float, 2 exponent and 3 mantissa bits.
    F6_E2M3,
    /// 6-bit float, 3 exponent and 2 mantissa bits.
    F6_E3M2,
    /// Unsigned 8-bit integer.
    U8,
    /// Signed 8-bit integer.
    I8,
    /// 8-bit float, 5 exponent and 2 mantissa bits.
    F8_E5M2,
    /// 8-bit float, 4 exponent and 3 mantissa bits.
    F8_E4M3,
    /// 8-bit exponent-only scale.
    F8_E8M0,
    /// 8-bit float, 4 exponent and 3 mantissa bits, finite, unsigned zero.
    F8_E4M3FNUZ,
    /// 8-bit float, 5 exponent and 2 mantissa bits, finite, unsigned zero.
    F8_E5M2FNUZ,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// IEEE half precision.
    F16,
    /// Brain float.
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Unsigned 32-bit integer.
    U32,
    /// IEEE single precision.
    F32,
    /// Complex of two single-precision floats.
    C64,
    /// IEEE double precision.
    F64,
    /// Signed 64-bit integer.
    I64,
    /// Unsigned 64-bit integer.
    U64,
}

impl Dtype {
    /// Every element type, in the format's order.
    pub const ALL: [Dtype; 22] = [
        Dtype::BOOL,
        Dtype::F4,
        Dtype::F6_E2M3,
        Dtype::F6_E3M2,
        Dtype::U8,
        Dtype::I8,
        Dtype::F8_E5M2,
        Dtype::F8_E4M3,
        Dtype::F8_E8M0,
        Dtype::F8_E4M3FNUZ,
        Dtype::F8_E5M2FNUZ,
        Dtype::I16,
        Dtype::U16,
        Dtype::F16,
        Dtype::BF16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::C64,
        Dtype::F64,
        Dtype::I64,
        Dtype::U64,
    ];

    /// Bits per element.
    pub fn bits(self) -> u64 {
        use Dtype::*;
        match self {
            F4 => 4,
            F6_E2M3 | F6_E3M2 => 6,
            BOOL | U8 | I8 | F8_E5M2 | F8_E4M3 | F8_E8M0 | F8_E4M3FNUZ | F8_E5M2FNUZ => 8,
            I16 | U16 | F16 | BF16 => 16,
            I32 | U32 | F32 => 32,
            C64 | F64 | I64 | U64 => 64,
        }
    }

    /// The name in a header (`"BF16"`).
    pub fn name(self) -> &'static str {
        use Dtype::*;
        match self {
            BOOL => "BOOL",
            F4 => "F4",
            F6_E2M3 => "F6_E2M3",
            F6_E3M2 => "F6_E3M2",
            U8 => "U8",
            I8 => "I8",
            F8_E5M2 => "F8_E5M2",
            F8_E4M3 => "F8_E4M3",
            F8_E8M0 => "F8_E8M0",
            F8_E4M3FNUZ => "F8_E4M3FNUZ",
            F8_E5M2FNUZ => "F8_E5M2FNUZ",
            I16 => "I16",
            U16 => "U16",
            F16 => "F16",
            BF16 => "BF16",
            I32 => "I32",
            U32 => "U32",
            F32 => "F32",
            C64 => "C64",
            F64 => "F64",
            I64 => "I64",
            U64 => "U64",
        }
    }

    /// The element type a header names, if it is one.
    pub fn parse(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Every name, comma-separated (for messages).
    pub fn known() -> String {
        Dtype::ALL.map(Dtype::name).join(", ")
    }

    /// Bytes of `elements` elements, `None` when that overflows or does
    /// not fill whole bytes (sub-byte types).
    pub fn bytes_of(self, elements: u64) -> Option<u64> {
        let bits = elements.checked_mul(self.bits())?;
        bits.is_multiple_of(8).then_some(bits / 8)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_count_bits() {
        for d in Dtype::ALL {
            assert_eq!(Dtype::parse(d.name()), Some(d));
        }
        assert_eq!(Dtype::parse("bf16"), None);
        assert_eq!(Dtype::parse("F8_E5M2FNUZ"), Some(Dtype::F8_E5M2FNUZ));
        assert_eq!(Dtype::F8_E4M3FNUZ.bytes_of(3), Some(3));
        assert!(Dtype::known().starts_with("BOOL, F4, ") && Dtype::known().ends_with(", U64"));
        assert_eq!(Dtype::BF16.bytes_of(3), Some(6));
        assert_eq!(Dtype::C64.bytes_of(2), Some(16));
        assert_eq!(Dtype::F4.bytes_of(4), Some(2));
        assert_eq!(Dtype::F4.bytes_of(3), None);
        assert_eq!(Dtype::F6_E2M3.bytes_of(4), Some(3));
        assert_eq!(Dtype::U64.bytes_of(u64::MAX), None);
    }
}
