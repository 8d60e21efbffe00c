//! Reading the workspace's sources for the tidy checks: code without comments, literals or test items, each crate's module files, and the module graph their `crate::`/`super::` paths form.

use super::root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Source text with comments removed and string and character literals emptied, so that a
/// path in a doc comment or a message is not taken for code.
pub(super) fn code_of(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                } else if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == 'r'
            && (at(i + 1) == '"' || at(i + 1) == '#')
            && !(i > 0 && ident(chars[i - 1]) && chars[i - 1] != 'b')
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) != '"' {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && at(i + 1) == '\\' {
            // An escaped character literal: '\n', '\'', '\u{…}'.
            i += 3;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && at(i + 2) == '\'' {
            i += 3;
            out.push_str("' '");
        } else {
            // Anything else, a lifetime's quote included.
            out.push(c);
            i += 1;
        }
    }
    out
}

/// `code` without the items compiled only for tests (`#[cfg(test)]`, `#[cfg(all(test, …))]`):
/// tests may reach anywhere.
pub(super) fn without_tests(code: &str) -> String {
    let mut code = code.to_owned();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(") {
        let start = from + found;
        let inner = &code[start + "#[cfg(".len()..];
        if !(inner.starts_with("test)") || inner.starts_with("all(test")) {
            from = start + 1;
            continue;
        }
        let Some(stop) = code[start..].find([';', '{']).map(|k| start + k) else {
            code.truncate(start);
            break;
        };
        let end = if code[stop..].starts_with(';') {
            stop + 1
        } else {
            let mut depth = 0;
            let mut end = code.len();
            for (k, ch) in code[stop..].char_indices() {
                match ch {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = stop + k + 1;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            end
        };
        code.replace_range(start..end, "");
        from = start;
    }
    code
}

/// One module file of a crate: its path inside the crate and its code without tests.
pub(super) struct ModuleFile {
    /// The file, relative to the repository.
    pub(super) file: String,
    /// Its module path (`["turn", "dispatch"]`; empty for the crate root).
    pub(super) path: Vec<String>,
    /// Its code: no comments, no literals, no test items.
    pub(super) code: String,
}

/// Every module file of the crate rooted at `root_file`, found by following its `mod x;`
/// declarations (test modules are not followed).
pub(super) fn crate_files(root_file: &str) -> Vec<ModuleFile> {
    let mut out = Vec::new();
    let mut stack = vec![(root().join(root_file), Vec::<String>::new())];
    while let Some((file, path)) = stack.pop() {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let code = without_tests(&code_of(&text));
        let owns_dir = file
            .file_name()
            .is_some_and(|n| n == "lib.rs" || n == "main.rs" || n == "mod.rs");
        let dir = if owns_dir {
            file.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            file.with_extension("")
        };
        for name in declared_modules(&code) {
            let flat = dir.join(format!("{name}.rs"));
            let child = if flat.exists() {
                flat
            } else {
                dir.join(&name).join("mod.rs")
            };
            let mut child_path = path.clone();
            child_path.push(name);
            stack.push((child, child_path));
        }
        let rel = file.strip_prefix(root()).unwrap_or(&file);
        out.push(ModuleFile {
            file: rel.display().to_string(),
            path,
            code,
        });
    }
    out.sort_by(|a, b| a.file.cmp(&b.file));
    out
}

/// The names of the `mod name;` declarations in `code` (not inline `mod name { … }`).
pub(super) fn declared_modules(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (k, _) in code.match_indices("mod ") {
        let before = code[..k].chars().next_back();
        if before.is_some_and(|c| !(c.is_whitespace() || c == ')')) {
            continue;
        }
        let rest = &code[k + 4..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest.trim_start()[name.len()..].trim_start();
        if !name.is_empty() && after.starts_with(';') {
            names.push(name);
        }
    }
    names
}

/// The crates whose modules are checked: (name, root file).
pub(super) const CRATES: [(&str, &str); 10] = [
    ("rummy-text", "core/text/src/lib.rs"),
    ("rummy-provider", "core/provider/src/lib.rs"),
    ("rummy-store", "core/store/src/lib.rs"),
    ("rummy-core", "core/src/lib.rs"),
    ("rummy-actors", "actors/src/lib.rs"),
    ("rummy", "src/lib.rs"),
    ("rummy (binary)", "src/main.rs"),
    ("rummy-client", "client/src/lib.rs"),
    ("rummy-testkit", "testkit/src/lib.rs"),
    ("rummy-bench", "bench/src/lib.rs"),
];
/// The module paths a file's code names through `crate::…` and `super::…`, resolved from the
/// file's own module path (`self::` stays inside the module and is left out).
pub(super) fn named_paths(file: &ModuleFile) -> Vec<Vec<String>> {
    let code = &file.code;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    for keyword in ["crate::", "super::"] {
        for (k, _) in code.match_indices(keyword) {
            let before = code[..k].chars().next_back();
            if before.is_some_and(|c| ident(c) || c == ':' || c == '$') {
                continue;
            }
            let mut base: Vec<String> = if keyword == "crate::" {
                Vec::new()
            } else {
                file.path[..file.path.len().saturating_sub(1)].to_vec()
            };
            let mut rest = &code[k + keyword.len()..];
            while let Some(more) = rest.strip_prefix("super::") {
                base.pop();
                rest = more;
            }
            let firsts: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                group_items(group)
            } else {
                vec![rest.chars().take_while(|c| ident(*c)).collect()]
            };
            for first in firsts.into_iter().filter(|f| !f.is_empty() && f != "self") {
                let mut path = base.clone();
                path.push(first);
                out.push(path);
            }
        }
    }
    out
}

/// The first segment of each item of a `{a::b, c, d::{e, f}}` group, given the text after `{`.
pub(super) fn group_items(group: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0;
    let mut current = String::new();
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .iter()
        .map(|item| {
            item.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

/// A crate's module graph: top-level module → (top-level module it names → the files that do).
pub(super) fn module_graph(
    files: &[ModuleFile],
) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let modules: BTreeSet<&str> = files
        .iter()
        .filter_map(|f| f.path.first().map(String::as_str))
        .collect();
    let mut graph: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in files {
        let Some(from) = file.path.first() else {
            continue;
        };
        for path in named_paths(file) {
            let Some(to) = path.first().filter(|m| modules.contains(m.as_str())) else {
                continue;
            };
            if to != from {
                graph
                    .entry(from.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_default()
                    .insert(file.file.clone());
            }
        }
    }
    graph
}

/// The strongly connected components of more than one module (Tarjan's algorithm), each sorted.
pub(super) fn cycles(
    graph: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flat_map(BTreeMap::keys) {
                if !self.index.contains_key(w.as_str()) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w.as_str()]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w.as_str()) {
                    let low = self.low[v].min(self.index[w.as_str()]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !tarjan.index.contains_key(v.as_str()) {
            tarjan.visit(v);
        }
    }
    tarjan.found.sort();
    tarjan.found
}
