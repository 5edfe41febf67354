//! The stdlib modules tool code uses import and work inside the guest.

use codecell::Status;
use codecell_tests::run;

codecell_tests::for_each_guest! {
    #[tokio::test]
    async fn common_modules_import_and_work() {
        let code = r#"
import json, re, datetime, collections, math, itertools, functools, statistics, decimal
import fractions, random, hashlib, csv, string, heapq, bisect, base64, struct, textwrap
import dataclasses, typing, enum, io, uuid, zlib, copy, operator, unicodedata, difflib
checks = {
    "json": json.loads(json.dumps({"a": [1, 2.5, None]})) == {"a": [1, 2.5, None]},
    "re": re.findall(r"\d+", "a1b22c333") == ["1", "22", "333"],
    "datetime": (datetime.date(2024, 3, 1) - datetime.timedelta(days=1)).day == 29,
    "collections": collections.Counter("abracadabra").most_common(1) == [("a", 5)],
    "math": math.isclose(math.sqrt(2) ** 2, 2.0),
    "itertools": list(itertools.accumulate([1, 2, 3])) == [1, 3, 6],
    "functools": functools.reduce(lambda a, b: a * b, range(1, 6)) == 120,
    "statistics": statistics.median([3, 1, 2]) == 2,
    "decimal": decimal.Decimal("0.1") + decimal.Decimal("0.2") == decimal.Decimal("0.3"),
    "fractions": fractions.Fraction(1, 3) * 3 == 1,
    "hashlib": hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf"),
    "csv": list(csv.reader(io.StringIO("a,b\n1,2\n"))) == [["a", "b"], ["1", "2"]],
    "heapq": heapq.nsmallest(2, [5, 1, 4]) == [1, 4],
    "bisect": bisect.bisect([1, 3, 5], 4) == 2,
    "base64": base64.b64encode(b"hi") == b"aGk=",
    "struct": struct.unpack("<I", struct.pack("<I", 7)) == (7,),
    "textwrap": textwrap.wrap("a b c d", 3) == ["a b", "c d"],
    "dataclasses": dataclasses.asdict(dataclasses.make_dataclass("P", ["x"])(1)) == {"x": 1},
    "enum": enum.Enum("C", "RED GREEN").GREEN.value == 2,
    "uuid": len(str(uuid.uuid4())) == 36,
    "zlib": zlib.decompress(zlib.compress(b"x" * 100)) == b"x" * 100,
    "unicodedata": unicodedata.name("é") == "LATIN SMALL LETTER E WITH ACUTE",
    "difflib": difflib.SequenceMatcher(None, "abc", "abd").ratio() > 0.6,
    "random": 0 <= random.random() < 1,
}
bad = [k for k, ok in checks.items() if not ok]
print("bad:", bad)
print(len(checks))
"#;
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.status(), Status::Ok, "{outcome:#?}");
        assert_eq!(outcome.stdout, "bad: []\n24\n");
    }

    #[tokio::test]
    async fn classes_generators_and_exceptions_work() {
        let code = r#"
from dataclasses import dataclass
@dataclass
class Point:
    x: int
    y: int
    def norm2(self):
        return self.x ** 2 + self.y ** 2
def gen(n):
    for i in range(n):
        yield Point(i, i)
print(sum(p.norm2() for p in gen(4)))
class Oops(Exception):
    pass
try:
    raise Oops("x")
except Oops as e:
    print("caught", e)
print(f"{3.14159:.2f} {'x':>3}")
"#;
        let outcome = run(GUEST, code).await;
        assert_eq!(outcome.stdout, "28\ncaught x\n3.14   x\n", "{outcome:#?}");
    }

    #[tokio::test]
    async fn syntax_errors_are_reported_with_position() {
        let outcome = run(GUEST, "def broken(:\n    pass").await;
        assert_eq!(outcome.status(), Status::Error);
        let error = outcome.error().cloned().unwrap();
        assert_eq!(error.kind, "SyntaxError");
        assert!(error.traceback.contains("line 1"), "{}", error.traceback);
    }
}
