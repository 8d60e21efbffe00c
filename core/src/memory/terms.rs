//! The words recall looks for: a prompt's words as query terms, and the same words read out of a candidate's text.
//!
//! Words are read as the index's tokenizer reads them (`unicode61`, diacritics kept): runs of
//! letters and digits, lower-cased; everything else separates. A prompt's words become terms
//! once common words are dropped and each is kept once; a term of [`PREFIX_MIN`] letters or
//! more also matches the words it begins (`listen` finds `listens`), in the index and here
//! alike. The store quotes every term for its index (`store::memory::recall_matches`).

pub use rummy_store::memory::PREFIX_MIN;

/// Most terms a prompt gives (the first ones): a long paste does not make a huge query.
pub const MAX_TERMS: usize = 24;

/// How many of a prompt's terms the index is searched for: the rarest, which tell what the
/// prompt is about (a common word matches thousands of entries, and scoring them all costs more
/// than it tells). Sections are still matched against every term.
pub const SEARCHED: usize = 8;

/// The terms to search the index for: of `terms`, those some entry holds (`frequency` says how
/// many), the [`SEARCHED`] rarest, in the prompt's order.
pub fn rarest<E>(
    terms: &[String],
    mut frequency: impl FnMut(&str, bool) -> Result<i64, E>,
) -> Result<Vec<String>, E> {
    let mut counted = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let held = frequency(term, term.chars().count() >= PREFIX_MIN)?;
        if held > 0 {
            counted.push((held, i));
        }
    }
    counted.sort_unstable();
    counted.truncate(SEARCHED);
    counted.sort_unstable_by_key(|&(_, i)| i);
    Ok(counted.into_iter().map(|(_, i)| terms[i].clone()).collect())
}

/// Words too common to say what a prompt is about.
const STOPWORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "did", "do", "does", "doing", "don", "down", "during", "each",
    "few", "for", "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers",
    "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself", "just", "let",
    "like", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "our", "ours", "out", "over", "own", "please", "same", "she", "should",
    "so", "some", "such", "than", "that", "the", "their", "theirs", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "us", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your", "yours",
];

/// The words of `text` as the index reads them: letters and digits, lower-cased.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// A prompt's query terms: its words in order, each once, without common words and single
/// letters, at most [`MAX_TERMS`].
pub fn query_terms(prompt: &str) -> Vec<String> {
    let mut terms: Vec<String> = Vec::new();
    for word in words(prompt) {
        if word.chars().count() < 2 || STOPWORDS.contains(&word.as_str()) {
            continue;
        }
        if !terms.contains(&word) {
            terms.push(word);
            if terms.len() == MAX_TERMS {
                break;
            }
        }
    }
    terms
}

/// Whether `word` (from [`words`]) matches `term`: equal, or begun by a long enough term.
pub fn matches(term: &str, word: &str) -> bool {
    word == term || (term.chars().count() >= PREFIX_MIN && word.starts_with(term))
}

/// The terms of `terms` that some word of `text` matches, in the order of `terms`.
pub fn matched<'t>(terms: &'t [String], text: &str) -> Vec<&'t str> {
    let words: Vec<String> = words(text).collect();
    terms
        .iter()
        .filter(|t| words.iter().any(|w| matches(t, w)))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A prompt's terms: its words lower-cased, each once, common words and letters dropped.
    #[test]
    fn terms_are_the_prompts_telling_words() {
        assert_eq!(
            query_terms("Which HOST runs the production deploy? The host, please — and café déjà!"),
            vec!["host", "runs", "production", "deploy", "café", "déjà"]
        );
        assert_eq!(query_terms("What is it? A, b, c."), Vec::<String>::new());
        let long: String = (0..40).map(|i| format!("word{i} ")).collect();
        assert_eq!(query_terms(&long).len(), MAX_TERMS);
    }

    /// Whatever a prompt holds, its terms are plain words: FTS5 operators, quotes, column
    /// filters and prefixes in it are read as words (the store quotes each term as well).
    #[test]
    fn no_fts_syntax_from_the_prompt_survives_as_syntax() {
        let prompt = r#""deploy" OR host* NEAR(a b) -x owner:p9 ^start {path}: AND NOT"#;
        assert_eq!(
            query_terms(prompt),
            vec!["deploy", "host", "near", "owner", "p9", "start", "path"]
        );
    }

    /// The index is searched for the rarest terms some entry holds, in the prompt's order.
    #[test]
    fn the_rarest_terms_are_searched() {
        let terms: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
        // t0 is held by no entry; t_i by i entries.
        let rare = rarest(&terms, |t, _| Ok::<i64, ()>(t[1..].parse().unwrap_or(0)));
        let want: Vec<String> = (1..=SEARCHED).map(|i| format!("t{i}")).collect();
        assert_eq!(rare, Ok(want));
        let few = &terms[..3];
        assert_eq!(
            rarest(few, |t, _| Ok::<i64, ()>(if t == "t1" { 0 } else { 5 })),
            Ok(vec!["t0".to_owned(), "t2".to_owned()])
        );
    }

    /// A long term matches the words it begins; a short one only itself.
    #[test]
    fn long_terms_match_as_prefixes() {
        let terms = vec!["listen".to_owned(), "db".to_owned()];
        assert_eq!(matched(&terms, "It listens on the dbase"), vec!["listen"]);
        assert_eq!(matched(&terms, "the DB; listening"), vec!["listen", "db"]);
        assert_eq!(matched(&terms, "nothing here"), Vec::<&str>::new());
    }
}
