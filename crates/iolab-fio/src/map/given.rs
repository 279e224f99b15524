//! The options of one job as given: the last value of each (a later one
//! overrides an earlier one), read into values with errors that name the
//! file, line and option.

use crate::parse::RawOpt;
use crate::value;
use crate::{FioJobError, Loc};
use std::cell::RefCell;

/// The last value given for each option, with where it was given.
pub(super) struct Given<'a> {
    pub opts: Vec<(&'static str, &'a RawOpt)>,
    /// Notes made while reading values (fio's reading of odd values).
    pub notes: RefCell<Vec<String>>,
}

impl<'a> Given<'a> {
    /// Position of the last `k` given (later options override earlier ones).
    pub fn pos(&self, k: &str) -> Option<usize> {
        self.opts.iter().rposition(|(n, _)| *n == k)
    }
    pub fn get(&self, k: &str) -> Option<&'a RawOpt> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| *n == k)
            .map(|(_, o)| *o)
    }
    pub fn val(&self, k: &str) -> Option<(&'a str, &'a Loc)> {
        self.get(k)
            .map(|o| (o.value.as_deref().unwrap_or(""), &o.loc))
    }
    pub fn flag(&self, k: &str, default: bool) -> Result<bool, FioJobError> {
        match self.get(k) {
            None => Ok(default),
            Some(o) => value::boolean(o.value.as_deref()).map_err(|e| bad(o, &e)),
        }
    }
    pub fn int(&self, k: &str) -> Result<Option<u64>, FioJobError> {
        self.parse(k, value::int)
    }
    /// The value of `k` read by `f`. A value that is neither a number nor
    /// an expression in parentheses but starts with one (`2*2048`) is read
    /// as fio reads it, its leading number, with a note.
    pub fn parse<T>(
        &self,
        k: &str,
        f: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, FioJobError> {
        let Some(o) = self.get(k) else {
            return Ok(None);
        };
        let v = o.value.as_deref().ok_or_else(|| {
            o.loc
                .err(format!("{}: needs a value ({}=...)", o.key, o.key))
        })?;
        match f(v) {
            Ok(x) => Ok(Some(x)),
            Err(e) => {
                if let Some(lead) = crate::expr::leading(v) {
                    if let Ok(x) = f(lead) {
                        self.notes.borrow_mut().push(format!(
                            "{}={v}: read as {lead}, as fio reads it (fio computes an expression only in parentheses: {}=({v}))",
                            o.key, o.key
                        ));
                        return Ok(Some(x));
                    }
                }
                Err(bad(o, &e))
            }
        }
    }
    pub fn refuse(&self, k: &str, why: &str) -> FioJobError {
        let o = self.get(k).expect("refused option was given");
        o.loc.err(format!(
            "{}={}: {why}",
            o.key,
            o.value.as_deref().unwrap_or("")
        ))
    }
}

/// An option whose value does not parse: the error, and when the value
/// used unset environment variables, that fio expanded them to nothing.
pub(super) fn bad(o: &RawOpt, e: &str) -> FioJobError {
    if o.unset.is_empty() {
        return o.loc.err(format!("{}: {e}", o.key));
    }
    let vars: Vec<String> = o.unset.iter().map(|v| format!("${{{v}}}")).collect();
    o.loc.err(format!(
        "{}={}: {} not set, and fio expands an unset variable to nothing, leaving '{}': {e} (set {})",
        o.key,
        o.written.as_deref().unwrap_or(""),
        vars.join(", "),
        o.value.as_deref().unwrap_or(""),
        o.unset.join(", ")
    ))
}
