//! Matching a URI against a template's tokens: backtracking, leftmost-shortest, with a
//! memo of failed states and a work budget.

use super::parse::{Class, ParamGroup, Start, Token, ValueToken, is_hex_pair};
use super::{MAX_WORK, UriTemplate};

/// Matches `literal` (template text, ASCII, possibly with percent-encoded
/// triplets) at `uri[pos..]`; returns the end position.
pub(super) fn match_literal(literal: &[u8], uri: &[u8], pos: usize) -> Option<usize> {
    let end = pos.checked_add(literal.len())?;
    let got = uri.get(pos..end)?;
    let mut i = 0;
    while i < literal.len() {
        if literal[i] == b'%' {
            // The template was validated, so two hex digits follow.
            let same = got[i] == b'%'
                && got[i + 1].eq_ignore_ascii_case(&literal[i + 1])
                && got[i + 2].eq_ignore_ascii_case(&literal[i + 2]);
            if !same {
                return None;
            }
            i += 3;
        } else {
            if got[i] != literal[i] {
                return None;
            }
            i += 1;
        }
    }
    Some(end)
}

/// Value of a hex digit.
pub(super) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes the percent-encoded triplet at `bytes[at..at + 3]`.
pub(super) fn decode_triplet(bytes: &[u8], at: usize) -> Option<u8> {
    match bytes.get(at..at + 3)? {
        [b'%', hi, lo] => Some(hex_value(*hi)? << 4 | hex_value(*lo)?),
        _ => None,
    }
}

/// Percent-decodes `raw`; `None` if the result is not UTF-8.
pub(super) fn percent_decode(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if let Some(b) = decode_triplet(bytes, i) {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Walks a value from its start and reports the positions where it could end:
/// after each complete character that keeps the percent-decoded value valid
/// UTF-8 and within the prefix limit.
pub(super) struct Scanner<'a> {
    /// The URI.
    pub(super) uri: &'a str,
    /// Current position.
    pub(super) pos: usize,
    /// Bytes allowed unencoded.
    pub(super) class: Class,
    /// Maximum number of characters.
    pub(super) prefix: Option<usize>,
    /// Characters decoded so far.
    pub(super) chars: usize,
    /// Continuation bytes still expected by the UTF-8 decoder.
    pub(super) pending: u8,
    /// Smallest acceptable next continuation byte.
    pub(super) low: u8,
    /// Largest acceptable next continuation byte.
    pub(super) high: u8,
}

impl<'a> Scanner<'a> {
    /// A scanner for a value starting at `pos`.
    pub(super) fn new(uri: &'a str, pos: usize, class: Class, prefix: Option<usize>) -> Self {
        Scanner {
            uri,
            pos,
            class,
            prefix,
            chars: 0,
            pending: 0,
            low: 0x80,
            high: 0xbf,
        }
    }

    /// The next position where the value may end, or `None` when the value
    /// cannot extend further.
    pub(super) fn next_end(&mut self) -> Option<usize> {
        let bytes = self.uri.as_bytes();
        loop {
            let b = *bytes.get(self.pos)?;
            if b == b'%' {
                let decoded = decode_triplet(bytes, self.pos)?;
                if !self.feed(decoded) {
                    return None;
                }
                self.pos += 3;
            } else if self.pending != 0 {
                return None;
            } else if b >= 0x80 {
                // Only whole characters are ever stepped over, so `pos` is on
                // a character boundary.
                self.pos += self.uri[self.pos..].chars().next()?.len_utf8();
                self.chars += 1;
            } else if self.class.allows(b) {
                self.pos += 1;
                self.chars += 1;
            } else {
                return None;
            }
            if self.pending == 0 {
                if self.prefix.is_some_and(|max| self.chars > max) {
                    return None;
                }
                return Some(self.pos);
            }
        }
    }

    /// Feeds one percent-decoded byte to the UTF-8 validator.
    pub(super) fn feed(&mut self, b: u8) -> bool {
        if self.pending == 0 {
            let (pending, low, high) = match b {
                0x00..=0x7f => {
                    self.chars += 1;
                    return true;
                }
                0xc2..=0xdf => (1, 0x80, 0xbf),
                0xe0 => (2, 0xa0, 0xbf),
                0xe1..=0xec | 0xee..=0xef => (2, 0x80, 0xbf),
                0xed => (2, 0x80, 0x9f),
                0xf0 => (3, 0x90, 0xbf),
                0xf1..=0xf3 => (3, 0x80, 0xbf),
                0xf4 => (3, 0x80, 0x8f),
                _ => return false,
            };
            self.pending = pending;
            self.low = low;
            self.high = high;
        } else {
            if !(self.low..=self.high).contains(&b) {
                return false;
            }
            self.pending -= 1;
            self.low = 0x80;
            self.high = 0xbf;
            if self.pending == 0 {
                self.chars += 1;
            }
        }
        true
    }
}

/// The work budget ran out.
pub(super) struct Exhausted;

/// A variable value found in the URI: raw (still encoded) text.
#[derive(Debug, Clone, Copy)]
pub(super) struct Binding {
    /// Index of the variable.
    pub(super) var: usize,
    /// Index of the token that bound it.
    pub(super) token: usize,
    /// Start of the raw value in the URI.
    pub(super) start: usize,
    /// End of the raw value in the URI.
    pub(super) end: usize,
    /// Prefix modifier of this occurrence of the variable.
    pub(super) prefix: Option<usize>,
}

/// State of one [`UriTemplate::matches`] call: a depth-first search over
/// (token, position) with the leftmost-shortest preference.
pub(super) struct Matcher<'a> {
    /// The template.
    pub(super) tpl: &'a UriTemplate,
    /// The URI.
    pub(super) uri: &'a str,
    /// Work done so far.
    pub(super) work: usize,
    /// Bit set of (token, position) states known not to match; allocated on
    /// first use.
    pub(super) failed: Vec<u64>,
    /// Values bound on the current search path.
    pub(super) bindings: Vec<Binding>,
    /// Decoded values once the whole URI matched.
    pub(super) result: Option<Vec<(String, String)>>,
}

impl Matcher<'_> {
    /// Charges `amount` units of work.
    pub(super) fn charge(&mut self, amount: usize) -> Result<(), Exhausted> {
        self.work += amount;
        if self.work > MAX_WORK {
            Err(Exhausted)
        } else {
            Ok(())
        }
    }

    /// Index of a state in the `failed` bit set, if the state is memoized.
    pub(super) fn memo_index(&self, token: usize, pos: usize) -> Option<usize> {
        (self.tpl.memoizable && token < self.tpl.tokens.len())
            .then(|| token * (self.uri.len() + 1) + pos)
    }

    /// Whether the rest of the template, from `token` on, matches the rest of
    /// the URI, from `pos` on.
    pub(super) fn run(&mut self, token: usize, pos: usize) -> Result<bool, Exhausted> {
        self.charge(1)?;
        let memo = self.memo_index(token, pos);
        if let Some(index) = memo
            && self
                .failed
                .get(index / 64)
                .is_some_and(|word| word & (1 << (index % 64)) != 0)
        {
            return Ok(false);
        }
        let matched = self.try_token(token, pos)?;
        if let (false, Some(index)) = (matched, memo) {
            if self.failed.is_empty() {
                let states = self.tpl.tokens.len() * (self.uri.len() + 1);
                self.failed = vec![0; states.div_ceil(64)];
            }
            self.failed[index / 64] |= 1 << (index % 64);
        }
        Ok(matched)
    }

    /// [`run`](Self::run) without the memoization.
    pub(super) fn try_token(&mut self, index: usize, pos: usize) -> Result<bool, Exhausted> {
        let tpl = self.tpl;
        let bytes = self.uri.as_bytes();
        match tpl.tokens.get(index) {
            None => Ok(pos == bytes.len() && self.finish()),
            Some(Token::Literal(range)) => {
                let literal = &tpl.template.as_str().as_bytes()[range.clone()];
                match match_literal(literal, bytes, pos) {
                    Some(end) => self.run(index + 1, end),
                    None => Ok(false),
                }
            }
            Some(Token::Char(c)) => {
                if bytes.get(pos) == Some(c) {
                    self.run(index + 1, pos + 1)
                } else {
                    Ok(false)
                }
            }
            Some(Token::Value(value)) => self.match_value(index, value, pos),
            Some(Token::Params(group)) => self.match_params(index, group, pos),
        }
    }

    /// Matches a single variable value starting at `pos`, shortest first.
    pub(super) fn match_value(
        &mut self,
        index: usize,
        value: &ValueToken,
        pos: usize,
    ) -> Result<bool, Exhausted> {
        let bytes = self.uri.as_bytes();
        let next = self.tpl.starts[index + 1];
        let mut scanner = Scanner::new(self.uri, pos, value.class, value.prefix);
        let mut end = if value.allow_empty {
            Some(pos)
        } else {
            scanner.next_end()
        };
        let mut scanned = pos;
        while let Some(candidate) = end {
            self.charge(candidate - scanned)?;
            scanned = candidate;
            let viable = match next {
                Start::End => candidate == bytes.len(),
                Start::Byte(b) => bytes.get(candidate) == Some(&b),
                Start::Any => true,
            };
            if viable {
                self.bindings.push(Binding {
                    var: value.var,
                    token: index,
                    start: pos,
                    end: candidate,
                    prefix: value.prefix,
                });
                if self.run(index + 1, candidate)? {
                    return Ok(true);
                }
                self.bindings.pop();
            }
            end = scanner.next_end();
        }
        Ok(false)
    }

    /// Matches a group of optional parameters starting at `start`: zero
    /// parameters first, then one more at a time.
    pub(super) fn match_params(
        &mut self,
        index: usize,
        group: &ParamGroup,
        start: usize,
    ) -> Result<bool, Exhausted> {
        let bytes = self.uri.as_bytes();
        let mark = self.bindings.len();
        let mut pos = start;
        'params: loop {
            // The group may end here.
            if self.run(index + 1, pos)? {
                return Ok(true);
            }
            // Otherwise another parameter must follow.
            let lead = if pos == start { group.lead } else { group.sep };
            if bytes.get(pos) != Some(&lead) {
                break;
            }
            let name_start = pos + 1;
            let name_end = varname_end(bytes, name_start);
            self.charge(name_end - pos)?;
            let name = &self.uri[name_start..name_end];
            let Some(param) = group
                .params
                .iter()
                .find(|param| self.tpl.vars[param.var] == name)
            else {
                break;
            };
            let repeated = self.bindings[mark..].iter().any(|b| b.var == param.var);
            if repeated && !param.explode {
                break;
            }
            if bytes.get(name_end) != Some(&b'=') {
                // `name` alone: an empty value.
                self.bindings.push(Binding {
                    var: param.var,
                    token: index,
                    start: name_end,
                    end: name_end,
                    prefix: param.prefix,
                });
                pos = name_end;
                continue;
            }
            let value_start = name_end + 1;
            let mut scanner = Scanner::new(self.uri, value_start, group.class, param.prefix);
            let mut end = Some(value_start);
            let mut scanned = value_start;
            while let Some(candidate) = end {
                self.charge(candidate - scanned)?;
                scanned = candidate;
                self.bindings.push(Binding {
                    var: param.var,
                    token: index,
                    start: value_start,
                    end: candidate,
                    prefix: param.prefix,
                });
                if bytes.get(candidate) == Some(&group.sep) {
                    // The separator cannot be part of a value, so this is the
                    // longest candidate: go on with the following parameter
                    // (after trying to end the group here).
                    pos = candidate;
                    continue 'params;
                }
                if self.run(index + 1, candidate)? {
                    return Ok(true);
                }
                self.bindings.pop();
                end = scanner.next_end();
            }
            break;
        }
        self.bindings.truncate(mark);
        Ok(false)
    }

    /// Decodes the bound values into `result`; false if they are
    /// inconsistent (a repeated variable with different values) or not UTF-8.
    pub(super) fn finish(&mut self) -> bool {
        // One entry per (variable, token): values bound by one token are
        // joined with `,` (repeated exploded parameters).
        let mut per_token: Vec<(&Binding, String)> = Vec::new();
        for binding in &self.bindings {
            let Some(value) = percent_decode(&self.uri[binding.start..binding.end]) else {
                return false;
            };
            match per_token
                .iter_mut()
                .find(|(b, _)| b.var == binding.var && b.token == binding.token)
            {
                Some((_, joined)) => {
                    joined.push(',');
                    joined.push_str(&value);
                }
                None => per_token.push((binding, value)),
            }
        }
        let mut values: Vec<Option<String>> = vec![None; self.tpl.vars.len()];
        if self.tpl.memoizable {
            // Every variable occurs once.
            for (binding, value) in per_token {
                values[binding.var] = Some(value);
            }
        } else {
            for (var, slot) in values.iter_mut().enumerate() {
                let occurrences = || per_token.iter().filter(|(b, _)| b.var == var);
                // The full value: from an occurrence without prefix modifier
                // if any, else the longest.
                let Some((_, full)) = occurrences()
                    .find(|(b, _)| b.prefix.is_none())
                    .or_else(|| occurrences().max_by_key(|(_, v)| v.chars().count()))
                else {
                    continue;
                };
                let consistent = occurrences().all(|(b, value)| match b.prefix {
                    None => value == full,
                    Some(max) => {
                        let end = full.char_indices().nth(max).map_or(full.len(), |(i, _)| i);
                        *value == full[..end]
                    }
                });
                if !consistent {
                    return false;
                }
                *slot = Some(full.clone());
            }
        }
        self.result = Some(
            self.tpl
                .vars
                .iter()
                .zip(values)
                .filter_map(|(name, value)| Some((name.clone(), value?)))
                .collect(),
        );
        true
    }
}

/// End of a parameter name starting at `pos`: the longest run of `varname`
/// characters (letters, digits, `_`, `.` and percent-encoded triplets).
pub(super) fn varname_end(bytes: &[u8], mut pos: usize) -> usize {
    while let Some(&b) = bytes.get(pos) {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' {
            pos += 1;
        } else if b == b'%' && is_hex_pair(bytes, pos + 1) {
            pos += 3;
        } else {
            break;
        }
    }
    pos
}
