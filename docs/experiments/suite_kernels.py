"""The compute kernels of `codecell bench` (crates/codecell-cli/src/bench_cmd/kernels.rs), each run
best of 7 in one process, printed in ms: `codecell run suite_kernels.py --memory-mb 1024` beside
`python3 suite_kernels.py`. Less exact than the bench (no medians, no ratio), but one run is
a few seconds, and a best-of is what a noisy machine disturbs least."""
import time, json, re
from decimal import Decimal, ROUND_HALF_EVEN
N=12000
doc = {'items': [{'id': i, 'name': 'item-%d' % i, 'tags': ['a', 'b', 'c'], 'score': i * 0.5, 'ok': i % 2 == 0} for i in range(N)]}
text = 'lorem ipsum 12345 dolor sit amet, mail bob@example.com; ' * 18000
pattern = re.compile(r'[\w.]+@[\w.]+|\d+')
rows = [{'k': (i * 7919) % 100003, 'v': i} for i in range(100000)]
cent = Decimal('0.01')
def loop():
    s = 0
    for i in range(1000000):
        s += i
    return s
def js(): return len(json.loads(json.dumps(doc))['items'])
def rx(): return len(pattern.findall(text))
def srt(): return sorted(rows, key=lambda r: r['k'])[0]['v']
def fmt():
    out = []
    for i in range(50000):
        out.append(f'{i:>8d} {i * 0.1:.3f} {hex(i)}' + ' %s=%r' % ('k', i) + '{0:<5}'.format(i % 97))
    return len('\n'.join(out))
def dec():
    total = Decimal(0)
    for i in range(20000):
        total += (Decimal(i) / Decimal(7)).quantize(cent, rounding=ROUND_HALF_EVEN)
    return str(total)
def best(f, n):
    b = 1e9
    for _ in range(n):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return b * 1000
print(" ".join(f"{f.__name__} {best(f, 7):.1f}" for f in (loop, js, rx, srt, fmt, dec)))
