//! Breadth-first traversal in the order of Python's `ast.walk`.
//!
//! The seed raises on the first offending node `ast.walk` yields, and `ast.walk` is breadth-first
//! over `iter_child_nodes`, which follows each node type's `_fields` order. To report the same
//! violation as the seed when a source breaks several rules, this module reproduces that order
//! over rustpython's tree, including CPython's intermediate nodes (`arguments`, `arg`, `keyword`,
//! `comprehension`, `withitem`, `match_case`, `excepthandler`), because they set each node's depth.
//! Leaf nodes (`alias`, operators, contexts, `Constant`) are left out: a leaf never enqueues
//! anything, so omitting it cannot change the relative order of the others.
//!
//! The traversal is iterative, so deep trees cannot overflow the stack here.

use std::collections::VecDeque;

use rustpython_parser::ast::{
    Arg, Arguments, Comprehension, ExceptHandler, Expr, Keyword, MatchCase, Pattern, Ranged, Stmt,
    TypeParam, WithItem,
};

/// A node of the tree, as `ast.walk` would yield it.
#[derive(Clone, Copy)]
pub(crate) enum Node<'a> {
    Stmt(&'a Stmt),
    Expr(&'a Expr),
    Pattern(&'a Pattern),
    Handler(&'a ExceptHandler),
    Arguments(&'a Arguments),
    Arg(&'a Arg),
    Keyword(&'a Keyword),
    Comprehension(&'a Comprehension),
    WithItem(&'a WithItem),
    MatchCase(&'a MatchCase),
    TypeParam(&'a TypeParam),
}

impl Node<'_> {
    /// Byte offset where the node starts, for nodes that carry a position.
    pub(crate) fn start(&self) -> Option<usize> {
        let range = match self {
            Node::Stmt(n) => n.range(),
            Node::Expr(n) => n.range(),
            Node::Pattern(n) => n.range(),
            Node::Handler(n) => n.range(),
            Node::Arguments(_) => return None,
            Node::Arg(n) => n.range(),
            Node::Keyword(n) => n.range(),
            Node::Comprehension(_) | Node::WithItem(_) | Node::MatchCase(_) => return None,
            Node::TypeParam(n) => n.range(),
        };
        Some(range.start().to_usize())
    }
}

/// Iterator over a module body in `ast.walk` order, yielding each node with its depth
/// (top-level statements have depth 1, as the `Module` itself has depth 0).
pub(crate) struct Walk<'a> {
    queue: VecDeque<(Node<'a>, usize)>,
    scratch: Vec<Node<'a>>,
}

impl<'a> Walk<'a> {
    pub(crate) fn new(body: &'a [Stmt]) -> Self {
        Walk {
            queue: body.iter().map(|s| (Node::Stmt(s), 1)).collect(),
            scratch: Vec::new(),
        }
    }
}

impl<'a> Iterator for Walk<'a> {
    type Item = (Node<'a>, usize);

    fn next(&mut self) -> Option<Self::Item> {
        let (node, depth) = self.queue.pop_front()?;
        children(node, &mut self.scratch);
        self.queue
            .extend(self.scratch.drain(..).map(|child| (child, depth + 1)));
        Some((node, depth))
    }
}

fn stmts<'a>(out: &mut Vec<Node<'a>>, body: &'a [Stmt]) {
    out.extend(body.iter().map(Node::Stmt));
}

fn exprs<'a>(out: &mut Vec<Node<'a>>, items: &'a [Expr]) {
    out.extend(items.iter().map(Node::Expr));
}

fn opt<'a>(out: &mut Vec<Node<'a>>, item: &'a Option<Box<Expr>>) {
    out.extend(item.as_deref().map(Node::Expr));
}

fn patterns<'a>(out: &mut Vec<Node<'a>>, items: &'a [Pattern]) {
    out.extend(items.iter().map(Node::Pattern));
}

/// Pushes the children of `node` in CPython's `_fields` order (3.11 fields, then 3.12's
/// `type_params`, which are always last or, for `TypeAlias`, between name and value).
fn children<'a>(node: Node<'a>, out: &mut Vec<Node<'a>>) {
    match node {
        Node::Stmt(stmt) => stmt_children(stmt, out),
        Node::Expr(expr) => expr_children(expr, out),
        Node::Pattern(pattern) => pattern_children(pattern, out),
        Node::Handler(ExceptHandler::ExceptHandler(h)) => {
            opt(out, &h.type_);
            stmts(out, &h.body);
        }
        Node::Arguments(args) => arguments_children(args, out),
        Node::Arg(arg) => opt(out, &arg.annotation),
        Node::Keyword(keyword) => out.push(Node::Expr(&keyword.value)),
        Node::Comprehension(c) => {
            out.push(Node::Expr(&c.target));
            out.push(Node::Expr(&c.iter));
            exprs(out, &c.ifs);
        }
        Node::WithItem(item) => {
            out.push(Node::Expr(&item.context_expr));
            opt(out, &item.optional_vars);
        }
        Node::MatchCase(case) => {
            out.push(Node::Pattern(&case.pattern));
            opt(out, &case.guard);
            stmts(out, &case.body);
        }
        Node::TypeParam(TypeParam::TypeVar(var)) => opt(out, &var.bound),
        Node::TypeParam(_) => {}
    }
}

/// CPython's `arguments` has `posonlyargs, args, vararg, kwonlyargs, kw_defaults, kwarg,
/// defaults`; rustpython attaches each default to its parameter, so the lists are rebuilt.
fn arguments_children<'a>(args: &'a Arguments, out: &mut Vec<Node<'a>>) {
    out.extend(args.posonlyargs.iter().map(|a| Node::Arg(&a.def)));
    out.extend(args.args.iter().map(|a| Node::Arg(&a.def)));
    out.extend(args.vararg.as_deref().map(Node::Arg));
    out.extend(args.kwonlyargs.iter().map(|a| Node::Arg(&a.def)));
    for a in &args.kwonlyargs {
        opt(out, &a.default);
    }
    out.extend(args.kwarg.as_deref().map(Node::Arg));
    for a in args.posonlyargs.iter().chain(&args.args) {
        opt(out, &a.default);
    }
}

fn stmt_children<'a>(stmt: &'a Stmt, out: &mut Vec<Node<'a>>) {
    match stmt {
        Stmt::FunctionDef(f) => {
            out.push(Node::Arguments(&f.args));
            stmts(out, &f.body);
            exprs(out, &f.decorator_list);
            opt(out, &f.returns);
            out.extend(f.type_params.iter().map(Node::TypeParam));
        }
        Stmt::AsyncFunctionDef(f) => {
            out.push(Node::Arguments(&f.args));
            stmts(out, &f.body);
            exprs(out, &f.decorator_list);
            opt(out, &f.returns);
            out.extend(f.type_params.iter().map(Node::TypeParam));
        }
        Stmt::ClassDef(c) => {
            exprs(out, &c.bases);
            out.extend(c.keywords.iter().map(Node::Keyword));
            stmts(out, &c.body);
            exprs(out, &c.decorator_list);
            out.extend(c.type_params.iter().map(Node::TypeParam));
        }
        Stmt::Return(s) => opt(out, &s.value),
        Stmt::Delete(s) => exprs(out, &s.targets),
        Stmt::Assign(s) => {
            exprs(out, &s.targets);
            out.push(Node::Expr(&s.value));
        }
        Stmt::TypeAlias(s) => {
            out.push(Node::Expr(&s.name));
            out.extend(s.type_params.iter().map(Node::TypeParam));
            out.push(Node::Expr(&s.value));
        }
        Stmt::AugAssign(s) => {
            out.push(Node::Expr(&s.target));
            out.push(Node::Expr(&s.value));
        }
        Stmt::AnnAssign(s) => {
            out.push(Node::Expr(&s.target));
            out.push(Node::Expr(&s.annotation));
            opt(out, &s.value);
        }
        Stmt::For(s) => {
            out.push(Node::Expr(&s.target));
            out.push(Node::Expr(&s.iter));
            stmts(out, &s.body);
            stmts(out, &s.orelse);
        }
        Stmt::AsyncFor(s) => {
            out.push(Node::Expr(&s.target));
            out.push(Node::Expr(&s.iter));
            stmts(out, &s.body);
            stmts(out, &s.orelse);
        }
        Stmt::While(s) => {
            out.push(Node::Expr(&s.test));
            stmts(out, &s.body);
            stmts(out, &s.orelse);
        }
        Stmt::If(s) => {
            out.push(Node::Expr(&s.test));
            stmts(out, &s.body);
            stmts(out, &s.orelse);
        }
        Stmt::With(s) => {
            out.extend(s.items.iter().map(Node::WithItem));
            stmts(out, &s.body);
        }
        Stmt::AsyncWith(s) => {
            out.extend(s.items.iter().map(Node::WithItem));
            stmts(out, &s.body);
        }
        Stmt::Match(s) => {
            out.push(Node::Expr(&s.subject));
            out.extend(s.cases.iter().map(Node::MatchCase));
        }
        Stmt::Raise(s) => {
            opt(out, &s.exc);
            opt(out, &s.cause);
        }
        Stmt::Try(s) => {
            stmts(out, &s.body);
            out.extend(s.handlers.iter().map(Node::Handler));
            stmts(out, &s.orelse);
            stmts(out, &s.finalbody);
        }
        Stmt::TryStar(s) => {
            stmts(out, &s.body);
            out.extend(s.handlers.iter().map(Node::Handler));
            stmts(out, &s.orelse);
            stmts(out, &s.finalbody);
        }
        Stmt::Assert(s) => {
            out.push(Node::Expr(&s.test));
            opt(out, &s.msg);
        }
        Stmt::Expr(s) => out.push(Node::Expr(&s.value)),
        Stmt::Import(_)
        | Stmt::ImportFrom(_)
        | Stmt::Global(_)
        | Stmt::Nonlocal(_)
        | Stmt::Pass(_)
        | Stmt::Break(_)
        | Stmt::Continue(_) => {}
    }
}

fn expr_children<'a>(expr: &'a Expr, out: &mut Vec<Node<'a>>) {
    match expr {
        Expr::BoolOp(e) => exprs(out, &e.values),
        Expr::NamedExpr(e) => {
            out.push(Node::Expr(&e.target));
            out.push(Node::Expr(&e.value));
        }
        Expr::BinOp(e) => {
            out.push(Node::Expr(&e.left));
            out.push(Node::Expr(&e.right));
        }
        Expr::UnaryOp(e) => out.push(Node::Expr(&e.operand)),
        Expr::Lambda(e) => {
            out.push(Node::Arguments(&e.args));
            out.push(Node::Expr(&e.body));
        }
        Expr::IfExp(e) => {
            out.push(Node::Expr(&e.test));
            out.push(Node::Expr(&e.body));
            out.push(Node::Expr(&e.orelse));
        }
        Expr::Dict(e) => {
            out.extend(e.keys.iter().flatten().map(Node::Expr));
            exprs(out, &e.values);
        }
        Expr::Set(e) => exprs(out, &e.elts),
        Expr::ListComp(e) => {
            out.push(Node::Expr(&e.elt));
            out.extend(e.generators.iter().map(Node::Comprehension));
        }
        Expr::SetComp(e) => {
            out.push(Node::Expr(&e.elt));
            out.extend(e.generators.iter().map(Node::Comprehension));
        }
        Expr::DictComp(e) => {
            out.push(Node::Expr(&e.key));
            out.push(Node::Expr(&e.value));
            out.extend(e.generators.iter().map(Node::Comprehension));
        }
        Expr::GeneratorExp(e) => {
            out.push(Node::Expr(&e.elt));
            out.extend(e.generators.iter().map(Node::Comprehension));
        }
        Expr::Await(e) => out.push(Node::Expr(&e.value)),
        Expr::Yield(e) => opt(out, &e.value),
        Expr::YieldFrom(e) => out.push(Node::Expr(&e.value)),
        Expr::Compare(e) => {
            out.push(Node::Expr(&e.left));
            exprs(out, &e.comparators);
        }
        Expr::Call(e) => {
            out.push(Node::Expr(&e.func));
            exprs(out, &e.args);
            out.extend(e.keywords.iter().map(Node::Keyword));
        }
        Expr::FormattedValue(e) => {
            out.push(Node::Expr(&e.value));
            opt(out, &e.format_spec);
        }
        Expr::JoinedStr(e) => exprs(out, &e.values),
        Expr::Attribute(e) => out.push(Node::Expr(&e.value)),
        Expr::Subscript(e) => {
            out.push(Node::Expr(&e.value));
            out.push(Node::Expr(&e.slice));
        }
        Expr::Starred(e) => out.push(Node::Expr(&e.value)),
        Expr::List(e) => exprs(out, &e.elts),
        Expr::Tuple(e) => exprs(out, &e.elts),
        Expr::Slice(e) => {
            opt(out, &e.lower);
            opt(out, &e.upper);
            opt(out, &e.step);
        }
        Expr::Constant(_) | Expr::Name(_) => {}
    }
}

fn pattern_children<'a>(pattern: &'a Pattern, out: &mut Vec<Node<'a>>) {
    match pattern {
        Pattern::MatchValue(p) => out.push(Node::Expr(&p.value)),
        Pattern::MatchSequence(p) => patterns(out, &p.patterns),
        Pattern::MatchMapping(p) => {
            exprs(out, &p.keys);
            patterns(out, &p.patterns);
        }
        Pattern::MatchClass(p) => {
            out.push(Node::Expr(&p.cls));
            patterns(out, &p.patterns);
            patterns(out, &p.kwd_patterns);
        }
        Pattern::MatchAs(p) => out.extend(p.pattern.as_deref().map(Node::Pattern)),
        Pattern::MatchOr(p) => patterns(out, &p.patterns),
        Pattern::MatchSingleton(_) | Pattern::MatchStar(_) => {}
    }
}
