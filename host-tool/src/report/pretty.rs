//! The JSON report's layout: serde_json's pretty printing (two spaces per
//! level, `": "` between a key and its value), written with one call per
//! line break and its indentation instead of one per level.
//!
//! A 64-thread report has some hundred thousand lines, most of them eight
//! levels deep; writing each level's two spaces on their own took a tenth
//! of the report's time.

use std::io;

use serde_json::ser::Formatter;

/// A line break after a comma, then the spaces of [`DEEPEST`] levels.
const BREAK: &[u8; 2 + 2 * DEEPEST] = &{
    let mut b = [b' '; 2 + 2 * DEEPEST];
    b[0] = b',';
    b[1] = b'\n';
    b
};
/// Levels indented with one write; deeper ones take more.
const DEEPEST: usize = 32;

/// serde_json's `PrettyFormatter` with its default indentation, byte for
/// byte.
#[derive(Debug, Default)]
pub(super) struct Pretty {
    depth: usize,
    has_value: bool,
}

impl Pretty {
    /// A line break (after a comma unless `first`) and the current
    /// indentation.
    fn line<W: ?Sized + io::Write>(&self, w: &mut W, first: bool) -> io::Result<()> {
        let from = usize::from(first);
        let levels = self.depth.min(DEEPEST);
        w.write_all(&BREAK[from..2 + 2 * levels])?;
        for _ in levels..self.depth {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        w.write_all(bracket)
    }

    fn close<W: ?Sized + io::Write>(&mut self, w: &mut W, bracket: &[u8]) -> io::Result<()> {
        self.depth = self.depth.saturating_sub(1);
        if self.has_value {
            self.line(w, true)?;
        }
        w.write_all(bracket)
    }
}

impl Formatter for Pretty {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(w, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.line(w, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _w: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    fn ours<T: Serialize>(v: &T) -> String {
        let mut out = Vec::new();
        let mut s = serde_json::Serializer::with_formatter(&mut out, Pretty::default());
        v.serialize(&mut s).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// The same text as serde_json's pretty printer, including empty
    /// containers and nesting deeper than one write covers.
    #[test]
    fn same_as_serde_jsons_pretty_printer() {
        let mut deep = json!([1, {"a": [], "b": {}}]);
        for i in 0..(DEEPEST + 5) {
            deep = json!({ "level": i, "inner": [deep, "x", null, {"k": 1.5}] });
        }
        for v in [
            json!(null),
            json!([]),
            json!({}),
            json!([[]]),
            json!({"a": {}}),
            deep,
        ] {
            assert_eq!(ours(&v), serde_json::to_string_pretty(&v).unwrap());
        }
    }
}
