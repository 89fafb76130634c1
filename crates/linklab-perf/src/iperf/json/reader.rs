//! A small pull reader over a JSON document in a byte slice: objects member by member,
//! arrays element by element, numbers as [`Decimal`] (no floating point), strings as their
//! raw bytes between the quotes (escapes kept, as serde-json-core lends them). No recursion
//! beyond what the document's nesting asks for, which callers bound first
//! ([`super::nesting_depth`]).

use super::number::Decimal;
use super::JsonError;

/// A scalar member value as the documents' readers want it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    /// `null`.
    Null,
    /// A number.
    Number(Decimal),
}

/// A position in a JSON document.
pub(crate) struct Reader<'a> {
    text: &'a [u8],
    at: usize,
}

const BAD: JsonError = JsonError::Malformed;

impl<'a> Reader<'a> {
    /// A reader at the start of `text`.
    pub fn new(text: &'a [u8]) -> Self {
        Reader { text, at: 0 }
    }

    /// The next byte after white space. Not inlined: one copy serves every token.
    #[inline(never)]
    fn peek(&mut self) -> Option<u8> {
        while let Some(&b) = self.text.get(self.at) {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Some(b);
            }
            self.at += 1;
        }
        None
    }

    fn expect(&mut self, b: u8) -> Result<(), JsonError> {
        if self.peek() != Some(b) {
            return Err(BAD);
        }
        self.at += 1;
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), JsonError> {
        let end = self.at + word.len();
        if self.text.get(self.at..end) != Some(word) {
            return Err(BAD);
        }
        self.at = end;
        Ok(())
    }

    /// Fails unless only whitespace is left.
    pub fn end(&mut self) -> Result<(), JsonError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(BAD),
        }
    }

    /// A string's raw bytes (between the quotes, escapes not decoded).
    pub fn string(&mut self) -> Result<&'a [u8], JsonError> {
        self.expect(b'"')?;
        let start = self.at;
        let mut escaped = false;
        while let Some(&b) = self.text.get(self.at) {
            self.at += 1;
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => return Ok(&self.text[start..self.at - 1]),
                _ => {}
            }
        }
        Err(BAD)
    }

    /// A number.
    pub fn number(&mut self) -> Result<Decimal, JsonError> {
        self.peek();
        let start = self.at;
        while let Some(b) = self.text.get(self.at) {
            if !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                break;
            }
            self.at += 1;
        }
        Decimal::parse(&self.text[start..self.at]).ok_or(BAD)
    }

    /// `null` or a number; anything else is malformed for such a member.
    pub fn scalar(&mut self) -> Result<Scalar, JsonError> {
        if self.peek() == Some(b'n') {
            self.literal(b"null")?;
            return Ok(Scalar::Null);
        }
        self.number().map(Scalar::Number)
    }

    /// An optional number: None for `null` (what serde reads into an `Option`).
    pub fn opt_number(&mut self) -> Result<Option<Decimal>, JsonError> {
        Ok(match self.scalar()? {
            Scalar::Null => None,
            Scalar::Number(d) => Some(d),
        })
    }

    /// Skips any value; returns false if it was `null`.
    pub fn skip(&mut self) -> Result<bool, JsonError> {
        match self.peek().ok_or(BAD)? {
            b'{' => self.object(|_, r| r.skip().map(drop))?,
            b'[' => self.array(|r| r.skip().map(drop))?,
            b'"' => drop(self.string()?),
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            b'n' => {
                self.literal(b"null")?;
                return Ok(false);
            }
            _ => drop(self.number()?),
        }
        Ok(true)
    }

    /// An object: `member(key, reader)` for each member, which must read or skip its value.
    pub fn object(
        &mut self,
        mut member: impl FnMut(&'a [u8], &mut Self) -> Result<(), JsonError>,
    ) -> Result<(), JsonError> {
        self.expect(b'{')?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':')?;
            member(key, self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(BAD),
            }
        }
    }

    /// An array: `element(reader)` for each element, which must read or skip it.
    pub fn array(
        &mut self,
        mut element: impl FnMut(&mut Self) -> Result<(), JsonError>,
    ) -> Result<(), JsonError> {
        self.expect(b'[')?;
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(BAD),
            }
        }
    }

    /// True if the next value is `null` (not consumed).
    pub fn at_null(&mut self) -> bool {
        self.peek() == Some(b'n')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_nested_documents() {
        let doc = br#" {"a": [1, {"b": "x\"}"}, null, true, false], "c": -2.5e1, "d": {}} "#;
        let mut r = Reader::new(doc);
        let mut seen = 0;
        r.object(|key, r| {
            seen += 1;
            match key {
                b"c" => {
                    let d = r.number()?;
                    assert_eq!((d.negative, d.int), (true, 25));
                    Ok(())
                }
                _ => r.skip().map(drop),
            }
        })
        .unwrap();
        r.end().unwrap();
        assert_eq!(seen, 3);
    }

    #[test]
    fn refuses_broken_documents() {
        for doc in [
            &b"{"[..],
            b"{\"a\":}",
            b"{\"a\" 1}",
            b"{\"a\":1,}",
            b"[1 2]",
            b"{\"a\":tru}",
            b"\"open",
            b"{\"a\":1}}",
            b"{\"a\":01x}",
        ] {
            let mut r = Reader::new(doc);
            let got = r.skip().and_then(|_| r.end());
            assert_eq!(got, Err(BAD), "{:?}", core::str::from_utf8(doc));
        }
    }
}
