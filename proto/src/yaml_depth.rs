//! How deeply a YAML text nests, measured in one linear pass before any parser sees it.
//!
//! The YAML parser's cost grows with the square of the nesting depth (it rescans every open
//! level at each token), so a 200 KB text nested 100,000 levels deep costs tens of seconds of
//! CPU before the deserialiser's own depth limit refuses it. Every YAML the server reads (the
//! fixtures, a scenario file or a `PUT /scenario` body) is measured here first, and one that
//! nests deeper than [`MAX_DEPTH`] is refused at once, at the line and column where it does.
//!
//! Levels are counted as the parser opens them: a flow collection (`[`, `{`) is one, a block
//! line indented further than the lines it sits in is one, and so is each `- ` of a compact
//! nested sequence (`- - - x`). Quoted scalars, comments and the content of block scalars
//! (`|`, `>`) open none.

/// Deeper than any Envoy resource written by hand (a listener's route configuration nests
/// about 25 levels), and shallow enough that the parser's cost stays linear in practice.
pub const MAX_DEPTH: usize = 100;

/// Where a text first nests deeper than allowed (1-based line and column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooDeep {
    /// 1-based line of the level that goes too deep.
    pub line: usize,
    /// 1-based column where that level opens.
    pub column: usize,
    /// The depth that was allowed (the `max` the text was checked against).
    pub max: usize,
}

impl std::fmt::Display for TooDeep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nested deeper than {} levels (collections inside collections): refused before parsing",
            self.max
        )
    }
}

/// The open levels while scanning.
#[derive(Default)]
struct Scan {
    /// Indentation columns of the open block levels, innermost last.
    block: Vec<usize>,
    flow: usize,
    quote: Option<char>,
    /// Inside a block scalar: lines indented further than this belong to it.
    scalar_parent: Option<usize>,
}

impl Scan {
    fn depth(&self) -> usize {
        self.block.len() + self.flow
    }
}

/// `Err` at the first place `text` nests deeper than `max` levels.
pub fn check(text: &str, max: usize) -> Result<(), TooDeep> {
    let mut scan = Scan::default();
    for (n, line) in text.lines().enumerate() {
        let too_deep = |column: usize| TooDeep {
            line: n + 1,
            column,
            max,
        };
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        if let Some(parent) = scan.scalar_parent {
            if rest.is_empty() || indent > parent {
                continue;
            }
            scan.scalar_parent = None;
        }
        let mut column = indent;
        if scan.quote.is_none() && scan.flow == 0 {
            if rest.is_empty() || rest.starts_with('#') {
                continue;
            }
            if line.starts_with("---") || line.starts_with("...") {
                scan.block.clear();
            }
            while scan.block.last().is_some_and(|&open| open >= indent) {
                scan.block.pop();
            }
            scan.block.push(indent);
            if scan.depth() > max {
                return Err(too_deep(column + 1));
            }
            let mut after = rest;
            while let Some(item) = after.strip_prefix("- ") {
                let content = item.trim_start_matches(' ');
                column += 2 + item.len() - content.len();
                scan.block.push(column);
                if scan.depth() > max {
                    return Err(too_deep(column + 1));
                }
                after = content;
            }
        }
        if let Some(column) = scan_flow(&mut scan, line, max) {
            return Err(too_deep(column));
        }
        if scan.quote.is_none() && scan.flow == 0 && opens_block_scalar(line) {
            scan.scalar_parent = Some(indent);
        }
    }
    Ok(())
}

/// Follows flow brackets and quotes along one line; the 1-based column where the depth went
/// over `max`, if it did.
fn scan_flow(scan: &mut Scan, line: &str, max: usize) -> Option<usize> {
    let mut prev = ' ';
    let mut escaped = false;
    for (column, c) in line.chars().enumerate() {
        match scan.quote {
            Some('"') => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    scan.quote = None;
                }
            }
            // `''` inside single quotes closes and reopens: the same state after both.
            Some(_) => {
                if c == '\'' {
                    scan.quote = None;
                }
            }
            None => match c {
                '#' if prev.is_whitespace() => break,
                '"' | '\'' if starts_scalar(prev) => scan.quote = Some(c),
                '[' | '{' => {
                    scan.flow += 1;
                    if scan.depth() > max {
                        return Some(column + 1);
                    }
                }
                ']' | '}' => scan.flow = scan.flow.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
    }
    None
}

/// Whether a quote after `prev` starts a quoted scalar (`it's` is a plain one).
fn starts_scalar(prev: char) -> bool {
    prev.is_whitespace() || matches!(prev, '[' | '{' | ',' | ':' | '-')
}

/// `key: |`, `- >-`, `|2`: the lines after it, indented further, are text.
fn opens_block_scalar(line: &str) -> bool {
    let code = match line.find(" #") {
        Some(at) => &line[..at],
        None => line,
    };
    let code = code.trim_end();
    let header = code.trim_end_matches(|c: char| c == '-' || c == '+' || c.is_ascii_digit());
    let Some(before) = header
        .strip_suffix('|')
        .or_else(|| header.strip_suffix('>'))
    else {
        return false;
    };
    before.is_empty() || before.ends_with(' ') || before.ends_with(':') || before.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_error(text: &str, max: usize) -> Option<(usize, usize)> {
        check(text, max).err().map(|e| (e.line, e.column))
    }

    #[test]
    fn flow_nesting_is_refused_where_it_goes_over() {
        let deep = format!("rules: {}1{}\n", "[".repeat(10_000), "]".repeat(10_000));
        assert_eq!(depth_error(&deep, MAX_DEPTH), Some((1, 8 + 99)));
        let shallow = format!("rules: {}1{}\n", "[".repeat(50), "]".repeat(50));
        assert_eq!(depth_error(&shallow, MAX_DEPTH), None);
    }

    #[test]
    fn block_and_compact_sequence_nesting_count() {
        let mut block = String::new();
        for level in 0..6 {
            block += &format!("{}k{level}:\n", " ".repeat(level));
        }
        assert_eq!(depth_error(&block, 5), Some((6, 6)));
        assert_eq!(depth_error(&block, 6), None);
        let compact = format!("{}x\n", "- ".repeat(8));
        assert_eq!(depth_error(&compact, 5), Some((1, 11)));
        // Back out to the first column: the levels close.
        let siblings = "a:\n  b:\n    c: 1\nd:\n  e: 2\n";
        assert_eq!(depth_error(siblings, 3), None);
    }

    #[test]
    fn quotes_comments_and_block_scalars_open_nothing() {
        let text = "a: \"[[[[\"\nb: '{{{{'\nc: it's [1] # [[[[\nd: |\n  [[[[\n    {{{{\n      deeper\ne: 1\n";
        assert_eq!(depth_error(text, 2), None);
        let escaped = "a: \"\\\"[[\"\nb: [[[1]]]\n";
        assert_eq!(depth_error(escaped, 3), Some((2, 6)));
    }
}
