//! Parsing with rustpython-parser, plus the nesting limits CPython's parser enforces.
//!
//! The seed's verdict comes from CPython's `ast.parse`, which refuses some sources that
//! rustpython-parser accepts because of fixed limits in CPython:
//! - more than 200 nested open brackets ("too many nested parentheses", tokenizer `MAXLEVEL`);
//! - more than 99 indentation levels ("too many levels of indentation", `MAXINDENT`);
//! - trees deeper than about 2,990 nodes (`RecursionError` while building the Python `ast`). That
//!   limit shrinks by 3 per Python frame on the caller's stack, so the seed's exact threshold
//!   depends on where it is called from; we refuse depth above [`MAX_TREE_DEPTH`], which is below
//!   it for any caller less than ~29 frames deep. Sources in the band between are the only ones
//!   where the seed's verdict is not fixed by the source alone.
//! - a leading U+FEFF (byte-order mark) in a `str` ("invalid non-printable character").

use rustpython_parser::lexer::lex;
use rustpython_parser::{Mode, Tok, ast};

use crate::dismantle::dismantle;
use crate::rules::RuleId;
use crate::text::LineIndex;
use crate::violation::Violation;
use crate::walker::Walk;

const MAX_BRACKET_DEPTH: usize = 200;
const MAX_INDENT_DEPTH: usize = 99;
/// Deepest accepted node, counted like `ast.walk` depth (module = 0, top-level statement = 1).
pub(crate) const MAX_TREE_DEPTH: usize = 2900;

/// A parsed module; freed without recursion (see [`dismantle`]).
pub(crate) struct Module {
    pub(crate) body: Vec<ast::Stmt>,
}

impl Drop for Module {
    fn drop(&mut self) {
        dismantle(std::mem::take(&mut self.body));
    }
}

/// Parses `source` as a module, refusing what CPython's `ast.parse` would refuse.
pub(crate) fn parse_module(source: &str, index: &LineIndex<'_>) -> Result<Module, Violation> {
    // The parser is third-party code fed untrusted input: a panic inside it must become a
    // rejection, never unwind into the caller.
    let parsed =
        std::panic::catch_unwind(|| rustpython_parser::parse(source, Mode::Module, "<dynamic>"));
    let module = match parsed {
        Ok(Ok(ast::Mod::Module(module))) => Module { body: module.body },
        Ok(Ok(_)) => return Err(syntax_error((1, 1), "the source is not a module")),
        Ok(Err(error)) => {
            return Err(syntax_error(
                index.position(error.offset.to_usize()),
                &error.error.to_string(),
            ));
        }
        Err(_) => return Err(syntax_error((1, 1), "the parser could not process it")),
    };
    check_tokens(source, index)?;
    check_depth(&module, index)?;
    if let Some((offset, detail)) = crate::grammar::first_error(source, &module.body) {
        return Err(syntax_error(index.position(offset), detail));
    }
    Ok(module)
}

fn check_tokens(source: &str, index: &LineIndex<'_>) -> Result<(), Violation> {
    // rustpython's lexer skips a leading byte-order mark; CPython's `ast.parse` of a `str`
    // refuses it (elsewhere, rustpython refuses it too).
    if source.starts_with('\u{feff}') {
        return Err(syntax_error(
            (1, 1),
            "invalid non-printable character U+FEFF (remove the byte-order mark)",
        ));
    }
    let (mut brackets, mut indents) = (0usize, 0usize);
    for (tok, range) in lex(source, Mode::Module).flatten() {
        match tok {
            Tok::Lpar | Tok::Lsqb | Tok::Lbrace => {
                brackets += 1;
                if brackets > MAX_BRACKET_DEPTH {
                    return Err(syntax_error(
                        index.position(range.start().to_usize()),
                        "too many nested parentheses (CPython allows 200)",
                    ));
                }
            }
            Tok::Rpar | Tok::Rsqb | Tok::Rbrace => brackets = brackets.saturating_sub(1),
            Tok::Indent => {
                indents += 1;
                if indents > MAX_INDENT_DEPTH {
                    return Err(syntax_error(
                        index.position(range.start().to_usize()),
                        "too many levels of indentation (CPython allows 99)",
                    ));
                }
            }
            Tok::Dedent => indents = indents.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

fn check_depth(module: &Module, index: &LineIndex<'_>) -> Result<(), Violation> {
    match Walk::new(&module.body).find(|(_, depth)| *depth > MAX_TREE_DEPTH) {
        Some((node, _)) => Err(syntax_error(
            node.start().map_or((1, 1), |at| index.position(at)),
            "expressions are nested too deeply (CPython's parser gives up); flatten them",
        )),
        None => Ok(()),
    }
}

fn syntax_error(at: (usize, usize), detail: &str) -> Violation {
    Violation::new(
        RuleId::SyntaxError,
        at,
        format!("the implementation does not parse: {detail}; fix the syntax and resubmit"),
    )
}
