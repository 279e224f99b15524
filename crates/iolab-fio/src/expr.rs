//! Arithmetic in fio's values, the two ways fio evaluates it:
//!
//! - a value that starts with `(` is an expression of fio's own parser:
//!   `+ - * / % ^`, parentheses, numbers with unit suffixes (`k`, `m`,
//!   `g`: 1024-based; `kib`, `mib`: 1000-based, as fio's expression lexer
//!   has them; `s`, `ms`, `us`, `m`, `h`, `d` for times, whose bare numbers
//!   are then microseconds);
//! - a value in which `$pagesize`, `$mb_memory` or `$ncpus` was replaced and
//!   that holds `+ - * /` is handed by fio to `bc`: integer arithmetic,
//!   no units (`size=8*1024*$pagesize`).
//!
//! Outside those two cases fio reads a value's leading number only
//! (`bs=2*2048` is 2 bytes in fio), which [`leading`] reproduces.

/// How bare numbers and suffixes of an expression are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Units {
    /// `bc`: integers, no suffixes.
    Bc,
    /// Sizes and counts: suffixes are byte multipliers.
    Bytes,
    /// Times: bare numbers are microseconds, `m` is minutes.
    Time,
}

/// A value of an expression: an integer unless a float took part (fio's
/// parser keeps both and takes the float's truncation once one appears).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Num {
    i: i128,
    f: f64,
    float: bool,
}

impl Num {
    fn int(i: i128) -> Num {
        Num {
            i,
            f: i as f64,
            float: false,
        }
    }
    fn float(f: f64) -> Num {
        Num {
            i: f as i128,
            f,
            float: true,
        }
    }
    fn op(
        self,
        o: Num,
        int: impl Fn(i128, i128) -> Option<i128>,
        fl: impl Fn(f64, f64) -> f64,
    ) -> Result<Num, String> {
        if self.float || o.float {
            Ok(Num::float(fl(self.f, o.f)))
        } else {
            int(self.i, o.i)
                .map(Num::int)
                .ok_or_else(|| "the result does not fit in 64 bits".to_string())
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    units: Units,
}

/// Evaluates `text` as an expression; the result is a whole number (a
/// float result is truncated, as fio truncates it). Errors name what is
/// wrong in one line.
pub fn eval(text: &str, units: Units) -> Result<i128, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        pos: 0,
        units,
    };
    let v = p.sum()?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(format!(
            "'{text}': unexpected '{}' in the expression",
            &text[p.pos..]
        ));
    }
    Ok(if v.float { v.f.trunc() as i128 } else { v.i })
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }
    fn sum(&mut self) -> Result<Num, String> {
        let mut v = self.product()?;
        while let Some(c @ (b'+' | b'-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if c == b'+' {
                v.op(r, i128::checked_add, |a, b| a + b)?
            } else {
                v.op(r, i128::checked_sub, |a, b| a - b)?
            };
        }
        Ok(v)
    }
    /// Products, then the unit suffixes that follow them (fio's grammar
    /// gives a suffix less precedence than `*` and `/`).
    fn product(&mut self) -> Result<Num, String> {
        let mut v = self.power()?;
        loop {
            match self.peek() {
                Some(c @ (b'*' | b'/')) => {
                    self.pos += 1;
                    let r = self.power()?;
                    v = if c == b'*' {
                        v.op(r, i128::checked_mul, |a, b| a * b)?
                    } else {
                        if r.i == 0 && r.f.abs() < 1e-20 {
                            return Err("division by zero".into());
                        }
                        v.op(r, i128::checked_div, |a, b| a / b)?
                    };
                }
                Some(c) if c.is_ascii_alphabetic() && self.units != Units::Bc => {
                    let m = self.suffix()?;
                    v = v.op(m, i128::checked_mul, |a, b| a * b)?;
                }
                _ => return Ok(v),
            }
        }
    }
    fn power(&mut self) -> Result<Num, String> {
        let base = self.modulo()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            let e = self.power()?;
            if base.float || e.float || e.i < 0 {
                return Ok(Num::float(base.f.powf(e.f)));
            }
            let e = u32::try_from(e.i).map_err(|_| "exponent too large".to_string())?;
            return base
                .i
                .checked_pow(e)
                .map(Num::int)
                .ok_or_else(|| "the result does not fit in 64 bits".into());
        }
        Ok(base)
    }
    fn modulo(&mut self) -> Result<Num, String> {
        let mut v = self.unary()?;
        while self.peek() == Some(b'%') {
            self.pos += 1;
            let r = self.unary()?;
            if v.float || r.float {
                return Err("'%' takes whole numbers".into());
            }
            if r.i == 0 {
                return Err("division by zero".into());
            }
            v = Num::int(v.i % r.i);
        }
        Ok(v)
    }
    fn unary(&mut self) -> Result<Num, String> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                let v = self.unary()?;
                Ok(Num {
                    i: -v.i,
                    f: -v.f,
                    float: v.float,
                })
            }
            Some(b'(') => {
                self.pos += 1;
                let v = self.sum()?;
                if self.peek() != Some(b')') {
                    return Err("a '(' without its ')'".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(c) if c.is_ascii_digit() || c == b'.' => self.number(),
            Some(c) => Err(format!("'{}' where a number belongs", c as char)),
            None => Err("the expression ends where a number belongs".into()),
        }
    }
    fn number(&mut self) -> Result<Num, String> {
        let rest = &self.s[self.pos..];
        if rest.starts_with(b"0x") || rest.starts_with(b"0X") {
            let n = rest[2..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count();
            let t = std::str::from_utf8(&rest[2..2 + n]).unwrap_or("");
            self.pos += 2 + n;
            return i128::from_str_radix(t, 16)
                .map(Num::int)
                .map_err(|_| "a bad hexadecimal number".into());
        }
        let n = rest
            .iter()
            .take_while(|c| c.is_ascii_digit() || **c == b'.')
            .count();
        let t = std::str::from_utf8(&rest[..n]).unwrap_or("");
        self.pos += n;
        let v = if t.contains('.') {
            Num::float(t.parse().map_err(|_| format!("'{t}': a bad number"))?)
        } else {
            Num::int(t.parse().map_err(|_| format!("'{t}': a bad number"))?)
        };
        // A bare number of a time is in microseconds: units scale from there.
        Ok(v)
    }
    /// A unit suffix, as a multiplier (times in microseconds).
    fn suffix(&mut self) -> Result<Num, String> {
        let n = self.s[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .count();
        let word = std::str::from_utf8(&self.s[self.pos..self.pos + n])
            .unwrap_or("")
            .to_ascii_lowercase();
        self.pos += n;
        let time = self.units == Units::Time;
        let m: i128 = match word.as_str() {
            "k" | "kb" => 1 << 10,
            "mb" => 1 << 20,
            "m" if time => 60_000_000,
            "m" => 1 << 20,
            "g" | "gb" => 1 << 30,
            "t" | "tb" => 1 << 40,
            "p" | "pb" => 1 << 50,
            "kib" => 1_000,
            "mib" => 1_000_000,
            "gib" => 1_000_000_000,
            "pib" => 1_000_000_000_000,
            "s" => 1_000_000,
            "ms" => 1_000,
            "us" => 1,
            "h" => 3_600_000_000,
            "d" => 86_400_000_000,
            _ => return Err(format!("'{word}' is not a unit fio's expressions know")),
        };
        Ok(Num::int(m))
    }
}

/// Whether fio hands a value to `bc` after replacing a keyword in it: it
/// holds `+`, `-`, `*` or `/`.
pub fn wants_bc(value: &str) -> bool {
    value.contains(['+', '-', '*', '/'])
}

/// What fio reads from a value that is neither an expression nor a plain
/// number: its leading number, and the unit letters right after it
/// (`2*2048` → `2`, `4k*2` → `4k`); None when the value is plain (or
/// starts with no number).
pub fn leading(value: &str) -> Option<&str> {
    let t = value.trim();
    if !t.contains(['*', '+', '^']) || t.contains([':', ',']) || t.starts_with('(') {
        return None;
    }
    let digits = t
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 1 && (c == 'x' || c == 'X'))))
        .map_or(t.len(), |(i, _)| i);
    if digits == 0 {
        return None;
    }
    let letters = t[digits..]
        .find(|c: char| !c.is_ascii_alphabetic())
        .map_or(t.len(), |i| digits + i);
    Some(&t[..letters])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bc_is_integer_arithmetic_with_the_usual_precedence() {
        assert_eq!(eval("8*1024*4096", Units::Bc), Ok(8 * 1024 * 4096));
        assert_eq!(
            eval("5*1024*1024*24000/8", Units::Bc),
            Ok(5 * 1024 * 1024 * 3000)
        );
        assert_eq!(eval("7/2", Units::Bc), Ok(3));
        assert_eq!(eval("2+3*4", Units::Bc), Ok(14));
        assert_eq!(eval("(2+3)*4", Units::Bc), Ok(20));
        assert_eq!(eval("2^10", Units::Bc), Ok(1024));
        assert_eq!(eval("-4+10", Units::Bc), Ok(6));
        assert!(eval("4k", Units::Bc).is_err());
        assert!(eval("1/0", Units::Bc).unwrap_err().contains("zero"));
        assert!(eval("(1+2", Units::Bc).unwrap_err().contains("')'"));
    }

    #[test]
    fn fio_s_expressions_take_units() {
        assert_eq!(eval("(2*2048)", Units::Bytes), Ok(4096));
        assert_eq!(eval("(4k*2)", Units::Bytes), Ok(8192));
        assert_eq!(eval("(1m+4k)", Units::Bytes), Ok((1 << 20) + 4096));
        assert_eq!(eval("(0x10 * 2)", Units::Bytes), Ok(32));
        assert_eq!(eval("(1.5*1024)", Units::Bytes), Ok(1536));
        // fio's lexer has KiB as 1000.
        assert_eq!(eval("(2kib)", Units::Bytes), Ok(2000));
        // Times: bare numbers are microseconds, m is minutes.
        assert_eq!(eval("(2s+500)", Units::Time), Ok(2_000_500));
        assert_eq!(eval("(1m)", Units::Time), Ok(60_000_000));
        assert_eq!(eval("(10%3)", Units::Bytes), Ok(1));
        assert!(eval("(2q)", Units::Bytes).unwrap_err().contains("'q'"));
    }

    #[test]
    fn outside_an_expression_fio_reads_the_leading_number() {
        assert_eq!(leading("2*2048"), Some("2"));
        assert_eq!(leading("4k*2"), Some("4k"));
        assert_eq!(leading("4096"), None);
        assert_eq!(leading("(2*2048)"), None);
        assert_eq!(leading("4k-16k"), None);
        assert_eq!(leading("x*2"), None);
        assert!(wants_bc("8*1024*4096") && !wants_bc("4096"));
    }
}
