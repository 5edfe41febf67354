#!/usr/bin/env python3
"""Makes wasm-guests/cpython/pgo/cpython.profdata anew: the execution profile the CPython guest's C
is optimised with (README.md beside this file says what it is and when to remake it).

    python3 wasm-guests/cpython/pgo/profile.py [--rounds N]

1. builds CPython for wasm32-wasip1 with `-fprofile-generate` (kept apart from the guest's own
   build, in target/cpython-guest/pgo-*), and compiler-rt's profile runtime for wasm32-wasi:
   compiler-rt 19 from Debian's LLVM source tarball (pinned by sha256), without its file and
   platform parts, which platform.c here replaces;
2. links that into a training guest whose `_codecell_host` has a `pgo_profile()`;
3. runs workload.py over the differential corpus (fixtures/differential) in it, through
   `codecell run` (target/release/codecell, built here when missing);
4. merges the raw profile it prints with llvm-profdata (rustup's `llvm-tools` component, added
   when missing) into cpython.profdata.

The next `python3 wasm-guests/build.py` then rebuilds CPython with it.
"""

import argparse
import base64
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

PGO = Path(__file__).resolve().parent
sys.path.insert(0, str(PGO.parent.parent))
import build  # noqa: E402  (wasm-guests/build.py)

# LLVM 19.1.7's source (Debian's copy of the release tarball): compiler-rt's profile runtime.
# Its raw profile format (version 10) is the one zig's clang 22 instruments for.
LLVM_SOURCE = (
    "http://deb.debian.org/debian/pool/main/l/llvm-toolchain-19/llvm-toolchain-19_19.1.7.orig.tar.xz",
    "ae498f3bc58ae2d9f64ef5f0c035c4240152bf015a5b7738b15c22e93bdc97ce",
)
# The runtime's files the buffer writer needs (platform.c stands for the platform file).
RUNTIME_FILES = ("InstrProfiling", "InstrProfilingBuffer", "InstrProfilingWriter", "InstrProfilingInternal",
                 "InstrProfilingValue")
# Corpus programs left out of training, and why.
LEFT_OUT = {
    # Its deep `repr` of a list nested 100k times is quadratic in Py_ReprEnter: with it, a fifth of
    # all the counts were one loop no tool code spends time in.
    "66_c_recursion.py",
}
# Source files whose functions are left out of the profile, and why. clang then optimises them
# as it did before there was a profile.
UNPROFILED_FILES = {
    # The PEG parser's rule functions call one another; with their counts, ThinLTO inlined the hot
    # rules into `primary_rule` and its kin until wasm's irreducible-control-flow fix, quadratic
    # in a region's blocks, held the guest's link for 15 minutes and above 14 GiB. Parsing a
    # snippet is a small part of a run.
    "parser.c",
}
WORK = build.CPYTHON_WORK
BEGIN, END = "-----BEGIN PROFILE-----", "-----END PROFILE-----"


def profile_runtime(bin_dir: Path) -> list:
    """compiler-rt's profile runtime and platform.c compiled for wasm32-wasi; returns the objects."""
    downloads = WORK / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    archive = build.fetch(LLVM_SOURCE[0], LLVM_SOURCE[1], downloads / LLVM_SOURCE[0].rsplit("/", 1)[1])
    compiler_rt = WORK / "compiler-rt"
    if not (compiler_rt / ".unpacked").exists():
        build.log("unpacking compiler-rt's profile runtime")
        with tarfile.open(archive) as tar:
            wanted = [m for m in tar.getmembers()
                      if "/compiler-rt/lib/profile/" in m.name or "/compiler-rt/include/profile/" in m.name]
            for m in wanted:
                m.name = m.name.split("/compiler-rt/", 1)[1]
            tar.extractall(compiler_rt, members=wanted, **({"filter": "data"} if sys.version_info >= (3, 12) else {}))
        (compiler_rt / ".unpacked").touch()
    out = WORK / "pgo-runtime"
    out.mkdir(exist_ok=True)
    cc = str(bin_dir / "wasm32-wasi-cc")
    objects = []
    sources = [compiler_rt / "lib" / "profile" / f"{name}.c" for name in RUNTIME_FILES] + [PGO / "platform.c"]
    for src in sources:
        obj = out / (src.stem + ".o")
        subprocess.run([cc, "-c", "-O2", f"-I{compiler_rt / 'include'}", f"-I{compiler_rt / 'lib' / 'profile'}", str(src),
                        "-o", str(obj)], check=True)
        objects.append(obj)
    return objects


def training_guest(bin_dir: Path) -> Path:
    """The instrumented guest, built under WORK; returns its path."""
    native, zlib_prefix = build.build_cpython_native(bin_dir)
    flags = f"{build.cross_file_optimisation(bin_dir)} -fprofile-generate {build.PGO_NAMING}"
    libs = WORK / "pgo-libs"
    build.collect_libraries(build.build_cpython_wasm(bin_dir, native, zlib_prefix, WORK / "pgo-wasm", flags), libs)
    runtime = profile_runtime(bin_dir)
    return build.link_cpython_guest(bin_dir, native, WORK / "pgo-wasm", libs, WORK / "pgo-cargo", ["-DCODECELL_PGO_GENERATE"],
                                    runtime)


def codecell() -> Path:
    """target/release/codecell, built when missing."""
    exe = build.ROOT / "target" / "release" / ("codecell.exe" if os.name == "nt" else "codecell")
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "codecell-cli"], cwd=build.ROOT, check=True)
    return exe


def llvm_profdata() -> Path:
    """rustup's llvm-profdata (LLVM of rustc's version), the component added when missing."""
    sysroot = Path(build.run_out(["rustc", "--print", "sysroot"]).strip())
    host = re.search(r"host: (\S+)", build.run_out(["rustc", "-vV"]))[1]
    tool = sysroot / "lib" / "rustlib" / host / "bin" / "llvm-profdata"
    if not tool.exists():
        subprocess.run(["rustup", "component", "add", "llvm-tools"], check=True)
    return tool


def train(guest: Path, rounds: int) -> bytes:
    """Runs workload.py over the differential corpus in `guest`; returns the raw profile."""
    corpus = sorted((build.ROOT / "fixtures" / "differential").glob("[0-9]*.py"))
    programs = {p.name: p.read_text() for p in corpus if p.name not in LEFT_OUT}
    snippet = WORK / "pgo-training.py"
    snippet.write_text(f"PROGRAMS = {programs!r}\nROUNDS = {rounds}\n" + (PGO / "workload.py").read_text())
    build.log(f"training: {len(programs)} programs, {rounds} rounds")
    done = subprocess.run(
        [str(codecell()), "run", str(snippet), "--memory-mb", "2048", "--timeout-ms", "1800000",
         "--max-output-bytes", str(1 << 30)],
        env=dict(os.environ, CODECELL_CPYTHON_WASM=str(guest)), capture_output=True, text=True,
    )
    out = done.stdout
    if done.returncode != 0 or BEGIN not in out or END not in out:
        sys.stderr.write(out[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"the training run failed (exit {done.returncode})")
    build.log(out.split(BEGIN)[0].strip())
    return base64.b64decode(out.split(BEGIN, 1)[1].split(END, 1)[0])


def merge(raw: Path, profile: Path) -> None:
    """Merges the raw profile into `profile` (indexed format) without UNPROFILED_FILES' functions,
    which go through the text format: llvm-profdata's own filters only apply to `show`."""
    tool, text = str(llvm_profdata()), WORK / "pgo-training.proftext"
    subprocess.run([tool, "merge", "--text", "-o", str(text), str(raw)], check=True)
    # A header (lines of `#` and `:`), then records separated by blank lines, each starting with
    # its function's name; a static function is named `file;function` (PGO_NAMING).
    lines = text.read_text().split("\n")
    start = next(i for i, line in enumerate(lines) if not line.startswith(("#", ":")))
    header, records = lines[:start], "\n".join(lines[start:]).split("\n\n")
    kept = [r for r in records if r.split(";", 1)[0] not in UNPROFILED_FILES]
    build.log(f"profile: {len(records) - len(kept)} of {len(records)} functions left out ({', '.join(sorted(UNPROFILED_FILES))})")
    text.write_text("\n".join(header) + "\n" + "\n\n".join(kept))
    subprocess.run([tool, "merge", "-o", str(profile), str(text)], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20, help="times each corpus program runs (default 20)")
    args = parser.parse_args()
    bin_dir = build.ensure_zig()
    build.ensure_wasip2_target()
    raw = WORK / "pgo-training.profraw"
    raw.write_bytes(train(training_guest(bin_dir), args.rounds))
    merge(raw, build.PGO_PROFILE)
    build.log(f"wrote {build.PGO_PROFILE.relative_to(build.ROOT)} ({build.PGO_PROFILE.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
