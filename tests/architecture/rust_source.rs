//! Just enough Rust to see which paths a source file names: comments and literals blanked,
//! test-only code cut, `use` trees expanded. A lexer, not a parser: the checks built on it only
//! need paths, and a missed path can only hide an edge, never invent one.

/// `text` with comments removed and string and character literals blanked (line breaks kept,
/// so positions keep their line numbers).
pub(crate) fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        i = if c == '/' && next == Some('/') {
            let end = chars[i..].iter().position(|&c| c == '\n');
            end.map_or(chars.len(), |end| i + end)
        } else if c == '/' && next == Some('*') {
            block_comment(&chars, i, &mut out)
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            raw_string(&chars, i, hashes, &mut out)
        } else if c == '"' || c == '\'' && is_char_literal(&chars, i) {
            quoted(&chars, i, &mut out)
        } else {
            out.push(c);
            i + 1
        };
    }
    out
}

fn blank(c: char) -> char {
    if c == '\n' { '\n' } else { ' ' }
}

/// A (nested) block comment from `i`, blanked; returns where it ends.
fn block_comment(chars: &[char], mut i: usize, out: &mut String) -> usize {
    let mut depth = 0;
    while i < chars.len() {
        if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            out.push(blank(chars[i]));
            i += 1;
        }
    }
    i
}

/// `r"..."` / `r#"..."#` / `br"..."` from `i`: ends at a quote followed by as many hashes.
fn raw_string(chars: &[char], start: usize, hashes: usize, out: &mut String) -> usize {
    let mut i = start + chars[start..].iter().position(|&c| c == '"').unwrap_or(0) + 1;
    let closing =
        |j: usize| chars[j] == '"' && (1..=hashes).all(|h| chars.get(j + h) == Some(&'#'));
    while i < chars.len() && !closing(i) {
        i += 1;
    }
    let end = (i + 1 + hashes).min(chars.len());
    chars[start..end].iter().for_each(|&c| out.push(blank(c)));
    end
}

/// A string or character literal from `i` (its opening quote), escapes included, blanked.
fn quoted(chars: &[char], start: usize, out: &mut String) -> usize {
    let quote = chars[start];
    out.push(' ');
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' {
            out.push(' ');
            i += 1;
        }
        if let Some(&c) = chars.get(i) {
            out.push(blank(c));
        }
        i += 1;
    }
    out.push(' ');
    i + 1
}

/// At `i`: `r"`, `r#"`, `br"`, ... not inside an identifier. Returns the number of hashes.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    if i > 0 && ident(chars[i - 1]) {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = chars[j..].iter().take_while(|&&c| c == '#').count();
    (chars.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// `'x'` or `'\n'` at `i`, as opposed to a lifetime (`'a`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// `code` without its test-only parts: a `#[cfg(test)] mod name;` declaration is dropped, and
/// any other `#[cfg(test)]` item (by convention the `mod tests` at the end of a file) cuts the
/// rest of the file.
pub(crate) fn without_tests(code: &str) -> String {
    const TEST: &str = "#[cfg(test)]";
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find(TEST) {
        out.push_str(&rest[..at]);
        let mut after = rest[at + TEST.len()..].trim_start();
        while after.starts_with("#[") {
            let end = after.find(']').map_or(after.len(), |e| e + 1);
            after = after[end..].trim_start();
        }
        let declaration = after
            .strip_prefix("pub ")
            .unwrap_or(after)
            .strip_prefix("mod ")
            .and_then(|m| m.find(';').filter(|&semi| !m[..semi].contains('{')));
        match declaration {
            Some(_) => rest = &after[after.find(';').expect("found above") + 1..],
            None => return out,
        }
    }
    out.push_str(rest);
    out
}

/// One `use` statement: whether it re-exports (`pub`, `pub(crate)`, ...) and its leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Use {
    pub public: bool,
    pub leaves: Vec<UseLeaf>,
    /// Where the statement is in the code (from `use` to `;`).
    pub span: std::ops::Range<usize>,
}

/// One imported path: its segments (`self` inside braces resolved to the prefix) and the name
/// it is known by in the importing module (`None` for a glob).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UseLeaf {
    pub path: Vec<String>,
    pub name: Option<String>,
}

/// Every `use` statement of `code` (already through [`code_only`]).
pub(crate) fn use_statements(code: &str) -> Vec<Use> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("use") {
        let at = from + found;
        from = at + 3;
        let before = code[..at].chars().next_back();
        let after = code[at + 3..].chars().next();
        let word_start = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        if !word_start || !after.is_some_and(char::is_whitespace) {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let tree = &code[at + 3..at + end];
        // The tokens since the previous item: `pub`, `pub(crate)`, attributes.
        let head = code[..at].trim_end();
        let item_start = head.rfind([';', '{', '}']).map_or(0, |i| i + 1);
        let head = head[item_start..].trim();
        let public = head.ends_with("pub") || head.ends_with(')') && head.contains("pub(");
        out.push(Use {
            public,
            leaves: expand(&tokens(tree)),
            span: at..at + end,
        });
        from = at + end;
    }
    out
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else if c.is_alphanumeric() || c == '_' || c == '#' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || "_#".contains(chars[i])) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            out.push(word.trim_start_matches("r#").to_string());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// Expands a use tree (`a::{b, c::{self, d as e}, f::*}`) into its leaves.
fn expand(tokens: &[String]) -> Vec<UseLeaf> {
    let mut leaves = Vec::new();
    let mut at = 0;
    tree(tokens, &mut at, &[], &mut leaves);
    leaves
}

fn tree(tokens: &[String], at: &mut usize, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let mut path = prefix.to_vec();
    // A leading `::` (`use ::std::x`) names an extern crate; keep the path as written.
    while let Some(token) = tokens.get(*at) {
        match token.as_str() {
            "::" => *at += 1,
            "{" => {
                *at += 1;
                while tokens.get(*at).is_some_and(|t| t != "}") {
                    tree(tokens, at, &path, out);
                    if tokens.get(*at).is_some_and(|t| t == ",") {
                        *at += 1;
                    }
                }
                *at += 1;
                return;
            }
            "*" => {
                *at += 1;
                out.push(UseLeaf { path, name: None });
                return;
            }
            "," | "}" => break,
            "as" => {
                let alias = tokens.get(*at + 1).cloned();
                *at += 2;
                out.push(UseLeaf { path, name: alias });
                return;
            }
            "self" if !path.is_empty() => *at += 1,
            word => {
                path.push(word.to_string());
                *at += 1;
            }
        }
    }
    let name = path.last().cloned();
    if name.is_some() {
        out.push(UseLeaf { path, name });
    }
}

/// Paths written in code outside `use` statements that start with `crate`, `super` or `self`
/// (`crate::registry::TypeStatus { .. }`), as segment lists.
pub(crate) fn inline_paths(code: &str) -> Vec<Vec<String>> {
    let toks = tokens(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let starts = matches!(toks[i].as_str(), "crate" | "super" | "self");
        let preceded = i > 0 && toks[i - 1] == "::";
        if !starts || preceded || toks.get(i + 1).is_none_or(|t| t != "::") {
            i += 1;
            continue;
        }
        let mut path = vec![toks[i].clone()];
        i += 1;
        while toks.get(i).is_some_and(|t| t == "::") && toks.get(i + 1).is_some_and(|t| is_word(t))
        {
            path.push(toks[i + 1].clone());
            i += 2;
        }
        out.push(path);
    }
    out
}

fn is_word(token: &str) -> bool {
    token.chars().all(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(code: &str) -> Vec<(String, Option<String>)> {
        let uses = use_statements(&code_only(code));
        let all = uses.into_iter().flat_map(|u| u.leaves);
        all.map(|l| (l.path.join("::"), l.name)).collect()
    }

    #[test]
    fn use_trees_expand_to_every_leaf_with_its_name() {
        let found = leaves("pub use crate::{a::X, b::{self, c::Y as Z, d::*}};");
        let expected = [
            ("crate::a::X", Some("X")),
            ("crate::b", Some("b")),
            ("crate::b::c::Y", Some("Z")),
            ("crate::b::d", None),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(p, n)| (p.to_string(), n.map(String::from)))
            .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn comments_strings_and_test_code_name_no_paths() {
        let code = "// use crate::a;\nconst S: &str = \"crate::b::X\";\nfn f<'a>(x: &'a str) \
                    -> char { '{' }\nuse crate::c;\n#[cfg(test)]\nmod support;\nuse crate::d;\n\
                    #[cfg(test)]\nmod tests { use crate::e; }";
        let kept = without_tests(&code_only(code));
        let found: Vec<_> = leaves(&kept).into_iter().map(|(p, _)| p).collect();
        assert_eq!(found, ["crate::c", "crate::d"]);
        let inline = inline_paths("let x = crate::f::G { y: super::h::I };");
        assert_eq!(inline, [vec!["crate", "f", "G"], vec!["super", "h", "I"]]);
    }
}
