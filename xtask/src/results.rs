//! A benchmark's result on disk: the typed struct as `NAME.json`, and the
//! markdown rendered from it as `NAME.md`, side by side. The scorecard
//! reads the JSON back into the same structs, so a field renamed or
//! missing fails to build or fails loudly, never a figure lost in silence.

use std::fs;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::Error;

/// A typed result with its file name and its markdown.
pub trait Report: Serialize + DeserializeOwned {
    /// The file stem: `NAME.json` and `NAME.md`.
    const NAME: &'static str;

    /// The results file's markdown, rendered from the fields alone.
    fn markdown(&self) -> String;
}

/// The JSON file of `R` in `dir`.
pub fn json_path<R: Report>(dir: &Path) -> PathBuf {
    dir.join(format!("{}.json", R::NAME))
}

/// Write `r` into `dir` as `NAME.json` and `NAME.md`; the markdown's path.
///
/// # Errors
///
/// [`Error::Io`] when a file cannot be written.
pub fn write<R: Report>(dir: &Path, r: &R) -> Result<PathBuf, Error> {
    fs::create_dir_all(dir).map_err(Error::io(dir))?;
    let json = json_path::<R>(dir);
    let mut text = serde_json::to_string_pretty(r).map_err(|source| Error::Json {
        path: json.clone(),
        source,
    })?;
    text.push('\n');
    fs::write(&json, text).map_err(Error::io(&json))?;
    let md = dir.join(format!("{}.md", R::NAME));
    fs::write(&md, r.markdown()).map_err(Error::io(&md))?;
    Ok(md)
}

/// Read `NAME.json` of `dir` back into `R`.
///
/// # Errors
///
/// [`Error::Io`] when it cannot be read, [`Error::Json`] when it is not
/// `R`'s JSON (a field missing, renamed or of another type).
pub fn read<R: Report>(dir: &Path) -> Result<R, Error> {
    let path = json_path::<R>(dir);
    let text = fs::read_to_string(&path).map_err(Error::io(&path))?;
    serde_json::from_str(&text).map_err(|source| Error::Json { path, source })
}
