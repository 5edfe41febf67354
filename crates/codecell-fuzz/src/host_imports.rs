//! The host-import boundary (`ls`, `read`, `call_tool`, `call_tool_async`) driven through a
//! real engine by arbitrary sequences of calls with arbitrary strings.
//!
//! An input is lines, one call each (at most [`MAX_OPS`]):
//!
//! - `ls PATH`, `read PATH`: a tree call (any other line is read as `read LINE`);
//! - `call CATEGORY NAME JSON`: `call_tool(CATEGORY, NAME, **json.loads(JSON))`;
//! - `acall CATEGORY NAME JSON`: the same through `call_tool_async`, all such calls gathered at
//!   the end, concurrently.
//!
//! The guest prints what each call returned or raised; the property is that this is what the
//! catalog itself answers when asked directly: the boundary neither loses, invents nor
//! reorders anything, every refusal is an exception the snippet can catch, and the run ends
//! `ok`.

use crate::guest_run;
use codecell_catalog::py_string as py_str;
use codecell_catalog::{Catalog, HandlerError, ToolSpec, handler_fn};
use serde_json::{Value, json};
use std::sync::OnceLock;

/// Most calls one input makes.
pub const MAX_OPS: usize = 32;

/// Characters of a read file the guest shows (with its length).
const READ_PREFIX_CHARS: usize = 64;

/// One call of an input.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `ls(path)`.
    Ls(String),
    /// `read(path)`.
    Read(String),
    /// `call_tool(category, name, **json.loads(kwargs))`, awaited concurrently when `concurrent`.
    Call {
        /// The category argument.
        category: String,
        /// The tool name argument.
        name: String,
        /// JSON text the guest parses into the keyword arguments.
        kwargs: String,
        /// Through `call_tool_async`, gathered with the other concurrent calls.
        concurrent: bool,
    },
}

/// Parses an input into its calls (see the module docs).
pub fn parse(text: &str) -> Vec<Op> {
    text.lines()
        .take(MAX_OPS)
        .map(|line| {
            let (verb, rest) = line.split_once(' ').unwrap_or((line, ""));
            match verb {
                "ls" => Op::Ls(rest.to_string()),
                "read" => Op::Read(rest.to_string()),
                "call" | "acall" => {
                    let mut parts = rest.splitn(3, ' ');
                    Op::Call {
                        category: parts.next().unwrap_or("").to_string(),
                        name: parts.next().unwrap_or("").to_string(),
                        kwargs: parts.next().unwrap_or("{}").to_string(),
                        concurrent: verb == "acall",
                    }
                }
                _ => Op::Read(line.to_string()),
            }
        })
        .collect()
}

/// The catalog behind every run: tools that echo, add and fail, so a call's expected answer
/// is what [`Catalog::call`] gives.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let object = json!({"type": "object"});
        let numbers = json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        });
        Catalog::builder()
            .category("echo", "Tools that answer with what they were given.")
            .tool(
                "echo",
                ToolSpec::new("same", "Returns its arguments.", object.clone()),
                handler_fn(Ok),
            )
            .tool(
                "echo",
                ToolSpec::new("fail", "Always fails.", object),
                handler_fn(|args| Err(HandlerError::new(format!("refused {args}")))),
            )
            .category("math", "Arithmetic.")
            .tool(
                "math",
                ToolSpec::new("add", "a + b.", numbers),
                handler_fn(|args| {
                    let (a, b) = (args["a"].as_f64(), args["b"].as_f64());
                    Ok(json!(a.unwrap_or(0.0) + b.unwrap_or(0.0)))
                }),
            )
            .build()
            .expect("the oracle's catalog is valid")
    })
}

/// The snippet that makes `ops`' calls and prints one line per call: `TAG ok JSON` or
/// `TAG err EXCEPTION`, the concurrent calls last, in input order.
pub fn snippet(ops: &[Op]) -> String {
    let mut code = format!(
        "import json\n\
         def _show(tag, f):\n\
         \x20   try:\n\
         \x20       r = f()\n\
         \x20   except Exception as e:\n\
         \x20       print(tag, 'err', type(e).__name__)\n\
         \x20   else:\n\
         \x20       _ok(tag, r)\n\
         def _ok(tag, r):\n\
         \x20   print(tag, 'ok', json.dumps([len(r), r[:{READ_PREFIX_CHARS}]] if isinstance(r, str) else r))\n",
    );
    let mut concurrent = Vec::new();
    for op in ops {
        match op {
            Op::Ls(path) => code.push_str(&format!("_show('ls', lambda: ls({}))\n", py_str(path))),
            Op::Read(path) => {
                code.push_str(&format!("_show('read', lambda: read({}))\n", py_str(path)))
            }
            Op::Call {
                category,
                name,
                kwargs,
                concurrent: false,
            } => code.push_str(&format!(
                "_show('call', lambda: call_tool({}, {}, **json.loads({})))\n",
                py_str(category),
                py_str(name),
                py_str(kwargs)
            )),
            Op::Call {
                category,
                name,
                kwargs,
                ..
            } => concurrent.push(format!(
                "_acall({}, {}, {})",
                py_str(category),
                py_str(name),
                py_str(kwargs)
            )),
        }
    }
    if !concurrent.is_empty() {
        code.push_str(&format!(
            "import asyncio\n\
             async def _acall(c, n, j):\n\
             \x20   return await call_tool_async(c, n, **json.loads(j))\n\
             async def _all():\n\
             \x20   return await asyncio.gather({}, return_exceptions=True)\n\
             for r in asyncio.run(_all()):\n\
             \x20   if isinstance(r, BaseException):\n\
             \x20       print('acall', 'err', type(r).__name__)\n\
             \x20   else:\n\
             \x20       _ok('acall', r)\n",
            concurrent.join(", ")
        ));
    }
    code
}

/// What the guest must print for `op`: `Some((tag, Ok(value)))` or `Some((tag, Err(exception)))`,
/// or `None` when only the tag is predictable (keyword arguments that serde_json does not read
/// as an object: Python's `json` may still accept them, as it does `NaN`).
fn expected(op: &Op) -> (&'static str, Option<Result<Value, &'static str>>) {
    let catalog = catalog();
    match op {
        Op::Ls(path) => (
            "ls",
            Some(
                catalog
                    .ls(path)
                    .map(|entries| json!(entries))
                    .map_err(|_| "FileNotFoundError"),
            ),
        ),
        Op::Read(path) => (
            "read",
            Some(
                catalog
                    .read(path)
                    .map(|text| {
                        let prefix: String = text.chars().take(READ_PREFIX_CHARS).collect();
                        json!([text.chars().count(), prefix])
                    })
                    .map_err(|_| "FileNotFoundError"),
            ),
        ),
        Op::Call {
            category,
            name,
            kwargs,
            concurrent,
        } => {
            let tag = if *concurrent { "acall" } else { "call" };
            let Ok(args @ Value::Object(_)) = serde_json::from_str::<Value>(kwargs) else {
                return (tag, None);
            };
            let answer = guest_run::block_on(catalog.call(category, name, args));
            (tag, Some(answer.map_err(|_| "ToolError")))
        }
    }
}

/// Runs `data`'s calls on every guest ([`guest_run::guests`]) and panics where a guest's
/// answer differs from the catalog's own.
pub fn check(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let ops = parse(text);
    let code = snippet(&ops);
    let mut order: Vec<&Op> = ops.iter().filter(|op| !is_concurrent(op)).collect();
    order.extend(ops.iter().filter(|op| is_concurrent(op)));
    let wanted: Vec<_> = order.iter().map(|op| expected(op)).collect();
    for &guest in guest_run::guests() {
        let outcome = guest_run::run(guest, &code, catalog());
        assert!(
            outcome.is_ok(),
            "{guest:?}: the run ended {:?}: {:?}\n{code}",
            outcome.status(),
            outcome.error()
        );
        let lines: Vec<&str> = outcome.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            wanted.len(),
            "{guest:?}: one line per call\n{code}\n{}",
            outcome.stdout
        );
        for ((line, (tag, want)), op) in lines.iter().zip(&wanted).zip(&order) {
            let got = parse_line(line)
                .unwrap_or_else(|| panic!("{guest:?}: unreadable line {line:?} for {op:?}"));
            assert_eq!(got.0, *tag, "{guest:?}: {op:?}");
            if let Some(want) = want {
                assert_eq!(&got.1, want, "{guest:?}: {op:?}\n{code}");
            }
        }
    }
}

fn is_concurrent(op: &Op) -> bool {
    matches!(
        op,
        Op::Call {
            concurrent: true,
            ..
        }
    )
}

/// A printed line as `(tag, Ok(value) | Err(exception name))`.
fn parse_line(line: &str) -> Option<(&str, Result<Value, &str>)> {
    let mut parts = line.splitn(3, ' ');
    let (tag, status, rest) = (parts.next()?, parts.next()?, parts.next()?);
    match status {
        "ok" => Some((tag, Ok(serde_json::from_str(rest).ok()?))),
        "err" => Some((tag, Err(rest))),
        _ => None,
    }
}
