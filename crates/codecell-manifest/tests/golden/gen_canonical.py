#!/usr/bin/env python3
"""Regenerates canonical.json: JSON texts and what Python's canonical dumps makes of them.

Run from this directory: python3 gen_canonical.py > canonical.json
Each case is {"input": text, "canonical": text} or {"input": text, "error": reason}.
"""
import json
import math
import random
import sys


def canonical(value):
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def values():
    floats = [0.0, -0.0, 1.0, -1.0, 0.1, 0.2, 0.3, 1.5, 3600.0, 86400.0, 1e16, 1e15,
              9999999999999998.0, 1e17, 123456789012345678.0, 1e-4, 1e-5, 1e-7, 0.0001234,
              0.00001234, 1.5e-7, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
              -1.7976931348623157e308, 253402300799.0, 1712345678.123456, 2.5, 1e22, 1e21,
              1e23, 123.456, -0.000987, 4.35, 0.1 + 0.2, 1 / 3, 2 / 3, math.pi, math.e,
              float(2**53), float(2**53 + 2), float(2**63), float(2**64), 1e100, 1.0e-100]
    ints = [0, 1, -1, 42, 2**31, -2**31, 2**53 + 1, 2**63 - 1, -2**63, 2**63, 2**64 - 1,
            2**64, -2**63 - 1, 10**30, -10**40, 3**200]
    strings = ["", "a", "héllo", "日本語", "emoji 😀 and 🎉", "quote \" back \\ slash /",
               "ctl \x00\x01\x07\x08\x09\x0a\x0b\x0c\x0d\x1b\x1f end", "del \x7f", "\u2028\u2029",
               "\ufeffbom", "tab\tnl\n", "</script>", "\U0010ffff"]
    yield from floats
    yield from ints
    yield from strings
    yield from [None, True, False, [], {}, [[]], {"": {}}]
    yield {"b": 1, "a": 2, "A": 3, "é": 4, "Z": 5, "😀": 6, "\uffff": 7, "aa": 8, "a\x00": 9}
    yield {"type": "object", "properties": {"x": {"type": "number", "minimum": 0.5}},
           "additionalProperties": False, "required": ["x"]}
    yield {"ttl_s": 3600.0, "created_at": 1712345678.123456, "expires_at": 253402300799.0}
    yield [1, 1.0, -0.0, "1", [1e16, {"k": [None]}]]
    rng = random.Random(3)
    # Exact binary fractions with 16-17 significant digits, where shortest-repr ties happen.
    for _ in range(100):
        yield rng.randrange(2**44, 2**53) / 2 ** rng.randrange(1, 6)
    yield -977669004256545.25
    for _ in range(300):
        kind = rng.randrange(4)
        if kind == 0:
            yield rng.uniform(-1e6, 1e6)
        elif kind == 1:
            yield rng.random() * 10 ** rng.randrange(-30, 30)
        elif kind == 2:
            yield struct_random_float(rng)
        else:
            yield rng.randrange(-10**25, 10**25)


def struct_random_float(rng):
    import struct
    while True:
        bits = rng.getrandbits(64)
        x = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isfinite(x):
            return x


RAW_TEXTS = [
    ' { "b" : 1 ,\n\t"a" : [ 1 , 2 ] } ',
    '{"a": 1, "a": 2}',
    '{"a": 1, "b": 0, "a": {"z": 1, "y": 2}}',
    "-0", "-0.0", "0.0", "1E5", "1e+5", "1.0e-5", "12345678901234567890123456789",
    "-12345678901234567890123456789", "1e-400", "0.000001", "100000000000000000000.0",
    '"\\u00e9\\ud83d\\ude00\\n\\/"', '"\\u0000"', '"\\u001F"', "[]", "  null  ",
]

ERROR_TEXTS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "[1, NaN]", '"\\ud800"',
               '"\\udc00x"', "", "[1,]", "01", "1.", '{"a" 1}', '"ctl\x01"', "[1] 2", "tru"]


def main():
    cases = []
    for value in values():
        for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
            cases.append({"input": text, "canonical": canonical(json.loads(text))})
    for text in RAW_TEXTS:
        cases.append({"input": text, "canonical": canonical(json.loads(text))})
    for text in ERROR_TEXTS:
        try:
            value = json.loads(text)
            encoded = json.dumps(value, ensure_ascii=False, sort_keys=True,
                                 separators=(",", ":"), allow_nan=False)
            encoded.encode("utf-8")
        except (ValueError, UnicodeEncodeError) as error:
            cases.append({"input": text, "error": type(error).__name__})
        else:
            raise SystemExit(f"expected an error for {text!r}, got {encoded!r}")
    json.dump(cases, sys.stdout, ensure_ascii=False, indent=0)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
