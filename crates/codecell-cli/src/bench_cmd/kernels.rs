//! The Python workloads timed on both sides of the comparison: the same program text runs in the
//! guest and on native `python3`, and times only its kernel (set-up and start-up excluded) with
//! `time.perf_counter`, printing the seconds of each repetition as a JSON list.

/// A compute kernel: set-up code, then the body of `kernel()` that is timed.
pub struct Kernel {
    /// Row name.
    pub name: &'static str,
    /// Module-level set-up (builds the input); `N` is the size.
    pub setup: &'static str,
    /// The body of `def kernel():`, indented four spaces.
    pub body: &'static str,
    /// `N` at full size.
    pub size: usize,
}

/// The `s += i` loop of the table.
pub const LOOP: Kernel = Kernel {
    name: "loop_1e6",
    setup: "",
    body: "    s = 0\n    for i in range(N):\n        s += i\n    return s\n",
    size: 1_000_000,
};

/// The compute suite: what tool code does besides looping (parse, match, sort, format, count
/// money). Each full-size input is about 1 MB or 100k items.
pub const SUITE: [Kernel; 5] = [
    Kernel {
        name: "json_1mb",
        setup: "import json\n\
                doc = {'items': [{'id': i, 'name': 'item-%d' % i, 'tags': ['a', 'b', 'c'], \
                'score': i * 0.5, 'ok': i % 2 == 0} for i in range(N)]}\n",
        body: "    return len(json.loads(json.dumps(doc))['items'])\n",
        size: 12_000,
    },
    Kernel {
        name: "regex_1mb",
        setup: "import re\n\
                text = 'lorem ipsum 12345 dolor sit amet, mail bob@example.com; ' * N\n\
                pattern = re.compile(r'[\\w.]+@[\\w.]+|\\d+')\n",
        body: "    return len(pattern.findall(text))\n",
        size: 18_000,
    },
    Kernel {
        name: "sort_100k_dicts",
        setup: "rows = [{'k': (i * 7919) % 100003, 'v': i} for i in range(N)]\n",
        body: "    return sorted(rows, key=lambda r: r['k'])[0]['v']\n",
        size: 100_000,
    },
    Kernel {
        name: "string_format",
        setup: "",
        body: "    out = []\n    for i in range(N):\n        out.append(f'{i:>8d} {i * 0.1:.3f} {hex(i)}' + ' %s=%r' % ('k', i) + '{0:<5}'.format(i % 97))\n    return len('\\n'.join(out))\n",
        size: 50_000,
    },
    Kernel {
        name: "decimal_arith",
        setup: "from decimal import Decimal, ROUND_HALF_EVEN\ncent = Decimal('0.01')\n",
        body: "    total = Decimal(0)\n    for i in range(N):\n        total += (Decimal(i) / Decimal(7)).quantize(cent, rounding=ROUND_HALF_EVEN)\n    return str(total)\n",
        size: 20_000,
    },
];

/// Input sizes are divided by this in quick mode.
pub const QUICK_DIVISOR: usize = 100;

/// The program that runs `kernel` at `size`, `reps` times, printing each repetition's seconds.
pub fn program(kernel: &Kernel, size: usize, reps: usize) -> String {
    format!(
        "import json as _json, time as _time\n\
         N = {size}\n\
         {setup}\n\
         def kernel():\n\
         {body}\n\
         _times = []\n\
         for _ in range({reps}):\n    \
             _t = _time.perf_counter()\n    \
             kernel()\n    \
             _times.append(_time.perf_counter() - _t)\n\
         print(_json.dumps(_times))\n",
        setup = kernel.setup,
        body = kernel.body,
    )
}

/// A snippet making `calls` calls of `bench.add`, printing each call's seconds.
pub fn tool_calls_each(calls: usize) -> String {
    each_timed(calls, "call_tool('bench', 'add', a=i, b=1)")
}

/// [`tool_calls_each`] with each call awaited (`call_tool_async`, top-level await): a start and a
/// wait through the host instead of one synchronous call.
pub fn tool_calls_awaited_each(calls: usize) -> String {
    each_timed(calls, "await call_tool_async('bench', 'add', a=i, b=1)")
}

/// A snippet running `statement` `calls` times (with `i` the count), printing each one's seconds.
fn each_timed(calls: usize, statement: &str) -> String {
    format!(
        "import json, time\n\
         times = []\n\
         for i in range({calls}):\n    \
             t = time.perf_counter()\n    \
             {statement}\n    \
             times.append(time.perf_counter() - t)\n\
         print(json.dumps(times))\n"
    )
}

/// A snippet timing one block of `calls` calls of `bench.add`, printing its seconds.
pub fn tool_calls_block(calls: usize) -> String {
    format!(
        "import time\n\
         t = time.perf_counter()\n\
         for i in range({calls}):\n    \
             call_tool('bench', 'add', a=i, b=1)\n\
         print(time.perf_counter() - t)\n"
    )
}

/// A native program for the pause baseline: a little interpreter work (compile and exec a
/// snippet that builds a list, dumps it as JSON and matches a regex) timed once back to back
/// and once after a 10 ms sleep, `pairs` times; prints each pair's after-sleep ÷ back-to-back
/// time as a JSON list (read with [`seconds`], which parses any such list). What a pause costs code that is not codecell's, on this machine (caches and
/// TLBs cool while a core sleeps), to read `fresh_run_after_10ms` against.
pub fn pause_program(pairs: usize) -> String {
    format!(
        "import json, re, time\n\
         SRC = \"s = json.dumps([i * i for i in range(200)])\\nm = re.findall(r'\\\\d+', s)\\n\"\n\
         def work():\n    \
             exec(compile(SRC, '<pause>', 'exec'), {{'json': json, 're': re}})\n\
         for _ in range(20):\n    \
             work()\n\
         ratios = []\n\
         for _ in range({pairs}):\n    \
             t = time.perf_counter()\n    \
             work()\n    \
             busy = time.perf_counter() - t\n    \
             time.sleep(0.01)\n    \
             t = time.perf_counter()\n    \
             work()\n    \
             ratios.append((time.perf_counter() - t) / max(busy, 1e-9))\n\
         print(json.dumps(ratios))\n"
    )
}

/// A snippet that holds a 1 MB string while it waits in `bench.hold`, so its instance is live.
pub const HOLD: &str = "s = 'x' * 1_000_000\ncall_tool('bench', 'hold')\nprint(len(s))\n";

/// Parses a program's output: the JSON list of seconds (or one number) it printed last.
pub fn seconds(stdout: &str) -> Option<Vec<f64>> {
    let last = stdout.lines().rev().find(|l| !l.trim().is_empty())?;
    match serde_json::from_str::<serde_json::Value>(last).ok()? {
        serde_json::Value::Array(items) => items.iter().map(|v| v.as_f64()).collect(),
        serde_json::Value::Number(n) => n.as_f64().map(|v| vec![v]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_times_are_read_back() {
        assert_eq!(seconds("noise\n[0.5, 0.25]\n"), Some(vec![0.5, 0.25]));
        assert_eq!(seconds("0.125\n"), Some(vec![0.125]));
        assert_eq!(seconds("[\"x\"]"), None);
        assert_eq!(seconds(""), None);
    }

    #[test]
    fn the_pause_program_times_the_requested_pairs() {
        let text = pause_program(7);
        assert!(text.contains("for _ in range(7):\n"), "{text}");
        assert!(text.contains("time.sleep(0.01)"), "{text}");
    }

    #[test]
    fn every_kernel_program_is_valid_python_shape() {
        for kernel in SUITE.iter().chain([&LOOP]) {
            let text = program(kernel, 10, 2);
            assert!(text.contains("def kernel():\n    "), "{}", kernel.name);
            assert!(text.contains("N = 10\n"));
        }
    }
}
