//! Hedberg: the patterns that select entries and text, and the edit formats that change text.
//!
//! A pure library: no I/O, no clock. The store calls the pattern operations
//! from SQL (`rummy_store::hedberg_sql`); the `set` tool reads a body with [`parse_edit`] and
//! applies it with [`apply`].
//!
//! # Patterns
//!
//! [`Pattern::compile`] reads a pattern as the first kind below whose rule it
//! meets *and* whose text compiles (otherwise detection goes on to the next):
//!
//! 1. **sed** — exactly one whole command `s<d>search<d>replace<d>flags`, the
//!    closing delimiter present and only flag letters after it (`gimsuvyIM`).
//!    `d` is ASCII punctuation other than `\ . - _ ' " `` ` `` and brackets.
//! 2. **regex** — `/body/flags` where the body has no unescaped `/` outside a
//!    `[…]` class, flags are distinct letters from `dgimsuvy`, **and the body
//!    contains a regex metacharacter** `\ ^ $ * + ? ( ) [ ] { } |`. So
//!    `/home/guy`, `/docs/`, `/src/app.js` and even `/todo/i` are literal
//!    paths (a body of plain name characters names a path far more often than
//!    it is a regex); write `/\btodo\b/i` or `/(?i)todo/` for a regex. `.`
//!    alone does not count, since file names are full of dots.
//! 3. **jsonpath** — `$..…`, `$.` followed by a name start with no `/` in the
//!    pattern, or `$[` with no `/`.
//! 4. **xpath** — `//` followed by a name start, or `/…` containing an axis
//!    step (`child::`, `descendant::`, …) or a predicate that starts with `@`,
//!    is a number, or calls an XPath function (`[contains(., "x")]`).
//!    `/path/to/std::vector.html` stays a path: `std` is no axis.
//! 5. **glob** — an unescaped `*` or `?` anywhere. In a bare file path `*`
//!    and `?` stop at `/` and `**` crosses it (`*.js` matches `app.js`, not
//!    `src/app.js`; `src/**` matches everything below `src/`). In a scheme
//!    path (`scheme://…`) `*` and `?` cross `/`: `known://*`,
//!    `known://people/*` and `known://api_*` match every entry below them,
//!    however deep. Braces are literal, never expanded.
//! 6. **literal** — everything else (`:AI[]`, `c++`, `log{a,b}.txt`).
//!
//! # Operations
//!
//! | kind | [`hedmatch`] | [`hedsearch`] | [`hedreplace`] |
//! |---|---|---|---|
//! | literal | equal to the whole text | first occurrence | every occurrence |
//! | glob | covers the whole text | first substring match | every substring match |
//! | regex | a hit anywhere (anchor with `^…$`) | first hit | first hit, every hit with `g` |
//! | sed | a hit anywhere | first hit | its own replacement: first hit per line, every hit with `g` (a search that is no valid regex is literal text) |
//! | xpath, jsonpath | selects something | the first selected value, index 0 | never (`None`) |
//!
//! Regex flags `g` and `y` never make matching stateful: the same call gives
//! the same answer every time. Matching is case-sensitive unless a regex
//! asks otherwise. xpath and jsonpath patterns apply to XML and JSON texts;
//! against a text that does not parse they are read as literal text (so
//! `$.ajax` still finds jQuery calls in a script). A regex that needs
//! features the `regex` crate lacks (look-around, back-references) does not
//! compile and is read as the next kind that fits, usually literal.
//!
//! A body filter ([`hedfilter`], and the SQL function `hedsearch`) refuses a
//! body before parsing it when it is larger than 4 MiB (xpath, jsonpath,
//! regex and sed) or nested deeper than 256 levels (xpath, jsonpath): see
//! [`limits`]. The other operations never parse such a body either; they
//! read it as a text that is not XML/JSON.
//! Replacements read `$&`, `$1`, `$<name>` and `$$`; sed ones also `\1` and
//! `\<punctuation>`. In sed replacements `&` is literal (write `$&`) and `\n`
//! stays two characters: models editing code mean `&&` and `"\n"` far more
//! often than sed's whole-match and newline.
//!
//! # Edits
//!
//! [`parse_edit`] reads the eight formats (see [`edits`] for the order and
//! rules) into an [`Edit`]; [`apply`] applies it atomically. Each block is
//! looked for as exact text, then with regex escapes removed, then as whole
//! lines ignoring trailing whitespace, then as lines ignoring all whitespace
//! and blank lines, with the replacement re-indented to the file's
//! indentation. When a block matches several places the first (or the one
//! nearest a diff hunk's line number) is changed and a warning says which
//! and how many. An empty SEARCH fills an empty text, or inserts at a hunk's
//! line, or appends. A whole-line SEARCH replaced by nothing takes its line
//! break with it. sed blocks are regexes with `^`/`$` anchored at lines, as
//! in sed: without `g` they change the first match on each line, with `g`
//! every match; a sed block whose regex finds nothing (or does not compile)
//! is then tried as literal text.

mod apply;
pub mod edits;
mod glob;
mod jsonpath;
pub mod limits;
mod locate;
pub mod messages;
mod patch;
mod pattern;
mod rx;
mod sed;
mod xpath;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

pub use apply::{apply, Applied, BlockDiagnostic, EditFailure};
pub use edits::{parse_edit, recognise, Block, BlockKind, Edit, EditAttrs, EditFormat};
pub use limits::Refused;
pub use locate::Problem;
pub use patch::unified as unified_diff;
pub use pattern::{Found, Pattern, PatternKind};

/// Most compiled patterns the process-wide cache keeps; past this it starts over.
const CACHE_CAPACITY: usize = 1024;

/// Patterns longer than this are compiled each time rather than kept.
const CACHE_MAX_PATTERN_BYTES: usize = 4096;

/// A bounded map from pattern text to its compiled form, safe to share between threads.
#[derive(Debug, Default)]
pub struct PatternCache {
    capacity: usize,
    map: Mutex<HashMap<String, Arc<Pattern>>>,
}

impl PatternCache {
    /// An empty cache that keeps at most `capacity` patterns.
    pub fn new(capacity: usize) -> PatternCache {
        PatternCache {
            capacity,
            map: Mutex::default(),
        }
    }

    /// The compiled form of `pattern`, compiled now if it is not kept yet.
    ///
    /// Compiling happens outside the lock, so a slow compile never blocks
    /// other lookups; two threads compiling the same new pattern is harmless.
    /// When full the cache is emptied rather than tracking recency: patterns
    /// come from a turn's few commands, so the working set is small.
    pub fn get(&self, pattern: &str) -> Arc<Pattern> {
        if pattern.len() > CACHE_MAX_PATTERN_BYTES {
            return Arc::new(Pattern::compile(pattern));
        }
        if let Some(hit) = self.lock().get(pattern) {
            return Arc::clone(hit);
        }
        let compiled = Arc::new(Pattern::compile(pattern));
        let mut map = self.lock();
        if map.len() >= self.capacity {
            map.clear();
        }
        map.insert(pattern.to_owned(), Arc::clone(&compiled));
        compiled
    }

    /// How many patterns are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no pattern is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The map, even if a thread panicked while holding it (entries are always whole).
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Pattern>>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The process-wide cache behind [`hedmatch`], [`hedsearch`] and [`hedreplace`].
static CACHE: OnceLock<PatternCache> = OnceLock::new();

/// The compiled form of `pattern`, from the process-wide cache.
pub fn cached(pattern: &str) -> Arc<Pattern> {
    CACHE
        .get_or_init(|| PatternCache::new(CACHE_CAPACITY))
        .get(pattern)
}

/// Which kind `pattern` is read as.
pub fn detect(pattern: &str) -> PatternKind {
    cached(pattern).kind()
}

/// Does `text` match `pattern`? (See the table in the module doc.)
pub fn hedmatch(pattern: &str, text: &str) -> bool {
    cached(pattern).is_match(text)
}

/// Where `pattern` first occurs inside `text`, if it does.
pub fn hedsearch(pattern: &str, text: &str) -> Option<Found> {
    cached(pattern).search(text)
}

/// Where body filter `pattern` first occurs inside `text`, or why the filter refused `text`
/// unread: [`hedsearch`] behind the [`limits`].
pub fn hedfilter(pattern: &str, text: &str) -> Result<Option<Found>, Refused> {
    cached(pattern).filter(text)
}

/// `text` with `pattern`'s matches replaced by `replacement`, or `None` when nothing matched.
pub fn hedreplace(pattern: &str, replacement: &str, text: &str) -> Option<String> {
    cached(pattern).replace(replacement, text)
}
