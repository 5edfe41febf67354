//! The program generator: from a seed, a valid, terminating tool-code program that prints its
//! intermediate values, written so that its output does not depend on the interpreter.
//!
//! A program is a list of independent blocks (each defines what it uses), so any subset of them
//! is a program too: the reducer (`reduce.rs`) deletes blocks. What keeps output portable: sets
//! are printed sorted, floats rounded, exceptions by type name only (messages changed between
//! CPython versions), no `id()`, no default object reprs, no hash of `str`.

/// A generated program: its blocks, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// The seed it was generated from.
    pub seed: u64,
    /// Independent top-level blocks of source, each ending with a newline.
    pub blocks: Vec<String>,
}

impl Program {
    /// The program's source: its blocks, concatenated.
    pub fn source(&self) -> String {
        self.blocks.concat()
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same program on every
/// machine, with no dependency whose stream could change.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// An integer in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// The generators of one block each; a program is a random sequence of them.
const BLOCKS: [fn(&mut Rng, usize) -> String; 17] = [
    ints,
    floats,
    strings,
    containers,
    closures,
    classes,
    exceptions,
    generators,
    json_block,
    re_block,
    collections_block,
    itertools_block,
    math_block,
    sorting,
    comprehension_nest,
    libm,
    uncaught,
];

/// Words strings are made of: ASCII and a few non-ASCII letters (their case mappings are
/// stable).
const WORDS: [&str; 12] = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "x",
    "yy",
    "zeta9",
    "caf\u{e9}",
    "\u{3bb}ambda",
    "a_b",
    "Mixed",
    "42",
];

/// Generates the program of `seed`: 3 to 10 blocks.
pub fn generate(seed: u64) -> Program {
    let mut rng = Rng::new(seed);
    let count = rng.int(3, 10) as usize;
    let mut blocks = Vec::with_capacity(count);
    for n in 0..count {
        let which = rng.below(BLOCKS.len() as u64 - 1) as usize;
        blocks.push(BLOCKS[which](&mut rng, n));
    }
    // Sometimes the program ends with an uncaught exception: its type is compared too.
    if rng.below(8) == 0 {
        blocks.push(uncaught(&mut rng, count));
    }
    Program { seed, blocks }
}

fn word(rng: &mut Rng) -> String {
    // Rust's debug form of these words is also a valid Python literal of them.
    format!("{:?}", rng.pick(&WORDS))
}

fn int_list(rng: &mut Rng, len: usize) -> String {
    let items: Vec<String> = (0..len).map(|_| rng.int(-50, 50).to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn ints(rng: &mut Rng, n: usize) -> String {
    let (a, b) = (rng.int(-10_000, 10_000), rng.int(-300, 300));
    let b = if b == 0 { 7 } else { b };
    let big = rng.int(20, 90);
    format!(
        "a{n} = {a}\nb{n} = {b}\n\
         print(a{n} + b{n}, a{n} - b{n}, a{n} * b{n}, a{n} // b{n}, a{n} % b{n}, divmod(a{n}, b{n}))\n\
         print(a{n} & b{n}, a{n} | b{n}, a{n} ^ b{n}, a{n} << 3, a{n} >> 2, -a{n}, abs(b{n}), pow(a{n}, 2, 97))\n\
         print(2 ** {big}, (a{n} * 10 ** 20) // 3, hex(a{n}), bin(b{n}), int('{a}') == a{n})\n"
    )
}

fn floats(rng: &mut Rng, n: usize) -> String {
    let x = rng.int(-100_000, 100_000) as f64 / 64.0;
    let y = rng.int(1, 100_000) as f64 / 32.0;
    format!(
        "x{n} = {x:?}\ny{n} = {y:?}\n\
         print(round(x{n} + y{n}, 6), round(x{n} * y{n}, 4), round(x{n} / y{n}, 6), x{n} < y{n}, x{n} // y{n})\n\
         print(int(x{n}), round(x{n}), f'{{x{n}:.3f}}|{{y{n}:10.2f}}|{{x{n}:e}}', float('{y}') == y{n})\n"
    )
}

fn strings(rng: &mut Rng, n: usize) -> String {
    let (s, t) = (word(rng), word(rng));
    let width = rng.int(1, 12);
    format!(
        "s{n} = {s}\nt{n} = {t}\n\
         print(s{n}.upper(), s{n}.title(), s{n}[::-1], len(s{n} + t{n}), s{n} < t{n}, t{n} in s{n})\n\
         print(f'{{s{n}!r}}:{{t{n}:>{width}}}:{{len(s{n}):03d}}', s{n}.replace('a', '-'), (s{n} + t{n}).split('a'))\n\
         print('-'.join(sorted(s{n} + t{n})), s{n}.center({width}, '*'), s{n}.startswith(t{n}[:1]), repr(s{n} * 2))\n"
    )
}

fn containers(rng: &mut Rng, n: usize) -> String {
    let xs = {
        let len = rng.int(1, 8) as usize;
        int_list(rng, len)
    };
    let k = rng.int(2, 5);
    format!(
        "xs{n} = {xs}\n\
         print([v * v for v in xs{n} if v % {k}], {{v: v + 1 for v in xs{n}}}, sorted({{v % {k} for v in xs{n}}}))\n\
         print(sum(xs{n}), max(xs{n}), min(xs{n}), xs{n}[1:], xs{n}[::-2], len(xs{n}), sorted(set(xs{n})) == sorted(frozenset(xs{n})))\n\
         d{n} = dict(zip(map(str, xs{n}), range(len(xs{n}))))\n\
         print(d{n}, list(d{n}.items())[:3], d{n}.get('nope', -1), tuple(xs{n}[:2]))\n"
    )
}

fn closures(rng: &mut Rng, n: usize) -> String {
    let c = rng.int(-9, 9);
    let reps = rng.int(1, 5);
    format!(
        "def make{n}(k):\n    total = [0]\n    def add(x):\n        total[0] += x * k + {c}\n        return total[0]\n    return add\n\
         f{n} = make{n}({reps})\n\
         print([f{n}(i) for i in range({reps} + 2)], (lambda a, b=3: a * b)({c}), list(map(lambda v: v - {c}, range(3))))\n\
         def kw{n}(a, *rest, scale=2, **extra):\n    return (a * scale, rest, sorted(extra.items()))\n\
         print(kw{n}(1, 2, 3, scale={reps}, z=1, y=2))\n"
    )
}

fn classes(rng: &mut Rng, n: usize) -> String {
    let (a, b, c, d) = (
        rng.int(-9, 9),
        rng.int(-9, 9),
        rng.int(-9, 9),
        rng.int(-9, 9),
    );
    format!(
        "class V{n}:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n\
         \x20   def __add__(self, o):\n        return V{n}(self.x + o.x, self.y + o.y)\n\
         \x20   def __eq__(self, o):\n        return (self.x, self.y) == (o.x, o.y)\n\
         \x20   def __lt__(self, o):\n        return (self.x, self.y) < (o.x, o.y)\n\
         \x20   def __hash__(self):\n        return hash((self.x, self.y))\n\
         \x20   def __len__(self):\n        return abs(self.x) + abs(self.y)\n\
         \x20   def __repr__(self):\n        return f'V({{self.x}}, {{self.y}})'\n\
         p{n}, q{n} = V{n}({a}, {b}), V{n}({c}, {d})\n\
         print(p{n} + q{n}, p{n} == q{n}, sorted([q{n}, p{n}]), len(p{n} + q{n}), len({{p{n}, q{n}, V{n}({a}, {b})}}))\n\
         class W{n}(V{n}):\n    def __repr__(self):\n        return 'W' + super().__repr__()\n\
         print(W{n}(1, 2), isinstance(W{n}(0, 0), V{n}), W{n}.__mro__[1].__name__)\n"
    )
}

fn exceptions(rng: &mut Rng, n: usize) -> String {
    let raise = rng.pick(&[
        "1 // 0",
        "[][3]",
        "{}['k']",
        "int('x')",
        "None.attr",
        "raise ValueError('v')",
        "raise KeyError('k')",
        "x = 1",
    ]);
    format!(
        "def risky{n}():\n    {raise}\n\
         log{n} = []\n\
         try:\n    risky{n}()\n    log{n}.append('no error')\n\
         except (ZeroDivisionError, IndexError, KeyError) as e:\n    log{n}.append(type(e).__name__)\n\
         except Exception as e:\n    log{n}.append('other ' + type(e).__name__)\n\
         else:\n    log{n}.append('else')\n\
         finally:\n    log{n}.append('finally')\n\
         print(log{n})\n\
         class Custom{n}(Exception):\n    pass\n\
         try:\n    try:\n        raise Custom{n}('inner')\n    finally:\n        log{n}.append('inner finally')\n\
         except Custom{n} as e:\n    print(type(e).__name__, e.args, log{n}[-1])\n"
    )
}

fn generators(rng: &mut Rng, n: usize) -> String {
    let k = rng.int(1, 9);
    format!(
        "def gen{n}(m):\n    for i in range(m):\n        if i % 3 == 2:\n            continue\n        yield i * i\n    return m\n\
         print(list(gen{n}({k})), sum(gen{n}({k})), next(gen{n}({k}), 'empty'))\n\
         g{n} = (c for c in 'abcdef'[:{k}])\n\
         print(''.join(g{n}), list(zip(range(3), gen{n}({k}))), any(v > 10 for v in gen{n}({k})))\n\
         def deleg{n}():\n    got = yield from gen{n}(2)\n    yield got\n\
         print(list(deleg{n}()))\n"
    )
}

fn json_block(rng: &mut Rng, n: usize) -> String {
    let xs = {
        let len = rng.int(0, 5) as usize;
        int_list(rng, len)
    };
    let w = word(rng);
    format!(
        "import json\n\
         obj{n} = {{'w': {w}, 'xs': {xs}, 'n': None, 'ok': True, 'f': 1.5, 'nest': {{'b': [1, {{'c': 'd'}}]}}}}\n\
         text{n} = json.dumps(obj{n}, sort_keys=True)\n\
         print(text{n}, json.loads(text{n}) == obj{n}, json.dumps(obj{n}['xs'], indent=1))\n\
         print(json.dumps({w}, ensure_ascii=False), json.dumps({w}), json.loads('[1, 2.0, \"\\\\u00e9\"]'))\n"
    )
}

fn re_block(rng: &mut Rng, n: usize) -> String {
    let (a, b) = (rng.int(0, 999), rng.int(0, 999));
    let w = rng.pick(&WORDS[..7]);
    format!(
        "import re\n\
         text{n} = 'id={a}; name={w}; id={b}; x-y_z'\n\
         print(re.findall(r'\\d+', text{n}), re.sub(r'(\\w+)=(\\w+)', r'\\2:\\1', text{n}))\n\
         m{n} = re.search(r'name=(?P<n>[a-z]+)', text{n})\n\
         print(m{n}.group('n') if m{n} else None, re.split(r'[;\\s]+', text{n}), bool(re.fullmatch(r'[a-z_\\-]+', 'x-y_z')))\n"
    )
}

fn collections_block(rng: &mut Rng, n: usize) -> String {
    let xs = {
        let len = rng.int(1, 10) as usize;
        int_list(rng, len)
    };
    let r = rng.int(-3, 3);
    format!(
        "from collections import Counter, defaultdict, deque, OrderedDict, namedtuple\n\
         c{n} = Counter(v % 4 for v in {xs})\n\
         print(sorted(c{n}.items()), c{n}.most_common(1)[0][1], sum(c{n}.values()))\n\
         dd{n} = defaultdict(list)\n\
         for v in {xs}:\n    dd{n}[v % 3].append(v)\n\
         print(sorted(dd{n}.items()))\n\
         q{n} = deque({xs}, maxlen=5)\n\
         q{n}.rotate({r})\n\
         print(list(q{n}), q{n}.maxlen)\n\
         P{n} = namedtuple('P{n}', 'a b')\n\
         print(P{n}(1, 2).a + P{n}(3, 4).b, tuple(P{n}(5, 6)), list(OrderedDict.fromkeys('abca')))\n"
    )
}

fn itertools_block(rng: &mut Rng, _n: usize) -> String {
    let xs = {
        let len = rng.int(1, 4) as usize;
        int_list(rng, len)
    };
    let k = rng.int(1, 3);
    format!(
        "import itertools\n\
         print(list(itertools.permutations({xs}, {k}))[:6], list(itertools.combinations(range(4), {k})))\n\
         print(list(itertools.accumulate({xs})), list(itertools.chain({xs}, 'ab')), list(itertools.islice(itertools.count(5, {k}), 4)))\n\
         print([(key, len(list(grp))) for key, grp in itertools.groupby(sorted({xs}), key=lambda v: v > 0)])\n\
         print(list(itertools.product('ab', repeat=2)), list(itertools.zip_longest([1], [2, 3], fillvalue=0)))\n"
    )
}

fn math_block(rng: &mut Rng, n: usize) -> String {
    let (a, b) = (rng.int(1, 5000), rng.int(1, 5000));
    let k = rng.int(0, 25);
    format!(
        "import math\n\
         print(math.gcd({a}, {b}), math.factorial({k}), math.comb({k} + 3, 3), math.isqrt({a} * {b}))\n\
         print(round(math.sqrt({a}), 6), round(math.log({b}), 6), math.floor({a} / 7), math.ceil({b} / 7), round(math.pi * {k}, 5))\n\
         print(math.isclose(0.1 + 0.2, 0.3), math.inf > 10 ** 300, math.copysign(2, -{k}), math.trunc(-{a} / 3))\n\
         v{n} = sum(math.sin(i) for i in range({k}))\n\
         print(round(v{n}, 6))\n"
    )
}

fn sorting(rng: &mut Rng, n: usize) -> String {
    let count = rng.int(2, 7);
    let words: Vec<String> = (0..count).map(|_| word(rng)).collect();
    let words = words.join(", ");
    format!(
        "ws{n} = [{words}]\n\
         print(sorted(ws{n}), sorted(ws{n}, key=len), sorted(ws{n}, key=lambda w: (-len(w), w)))\n\
         print(sorted(ws{n}, reverse=True), max(ws{n}, key=len), sorted(enumerate(ws{n}), key=lambda p: p[1])[:2])\n\
         ws{n}.sort(key=str.lower)\n\
         print(ws{n}, list(reversed(ws{n})))\n"
    )
}

fn comprehension_nest(rng: &mut Rng, n: usize) -> String {
    let k = rng.int(1, 5);
    format!(
        "grid{n} = [[i * j for j in range({k})] for i in range({k})]\n\
         print(grid{n}, [v for row in grid{n} for v in row if v], {{i: [j for j in range(i)] for i in range({k})}})\n\
         flat{n} = sum(grid{n}, [])\n\
         print(flat{n}, sorted({{v for v in flat{n}}}), all(isinstance(v, int) for v in flat{n}))\n"
    )
}

/// Unrounded libm results: where RustPython is sometimes an ulp off (a known difference, which
/// the oracle counts by name).
fn libm(rng: &mut Rng, _n: usize) -> String {
    let x = rng.int(1, 400) as f64 / 16.0;
    format!(
        "import math\nprint(math.exp({x:?}), math.log({x:?}), math.cosh({x:?} / 8), math.sqrt({x:?}), math.atan({x:?}))\n"
    )
}

fn uncaught(rng: &mut Rng, _n: usize) -> String {
    let statement = rng.pick(&[
        "raise ValueError('end')",
        "1 / 0",
        "[].pop()",
        "{}['missing']",
        "int('nope')",
        "raise RuntimeError('end')",
    ]);
    format!("print('before the end')\n{statement}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_program_and_others_differ() {
        assert_eq!(generate(5), generate(5));
        assert_ne!(generate(5).source(), generate(6).source());
    }

    #[test]
    fn every_block_kind_is_generated_within_a_few_hundred_seeds() {
        let sources: String = (0..300).map(|s| generate(s).source()).collect();
        for marker in [
            "class V",
            "def gen",
            "import json",
            "import re",
            "Counter",
            "itertools.",
            "math.gcd",
            "sorted(ws",
            "grid",
            "try:",
            "def make",
            "before the end",
        ] {
            assert!(sources.contains(marker), "no block with {marker:?}");
        }
    }
}
