#!/usr/bin/env python3
"""Builds codecell's guests into target/guests/, skipping any whose inputs are unchanged.

    python3 wasm-guests/build.py                      # build what is out of date (CPython only)
    python3 wasm-guests/build.py --force              # rebuild anyway
    python3 wasm-guests/build.py --guest rustpython   # the RustPython guest (repeatable; or `all`)

Both guests are Rust crates (wasm-guests/cpython, wasm-guests/rustpython, each its own workspace
and Cargo.lock) built with cargo for wasm32-wasip2; the target is added with rustup when missing.
The CPython guest links CPython itself, built here from its source (Debian's copy of the release
tarball, checked against its sha256) as static libraries for wasm32-wasip1 with zig's clang
(PyPI's `ziglang`, installed into a virtualenv under target/), beside a native build of the same
CPython that the cross build and the stdlib freezing need: a fresh Linux or macOS machine needs
python3 (3.10+), a C compiler, make and the network. That part is kept in target/cpython-guest/
and redone only when its sources or flags change (about 5 minutes on 2 cores).
Each guest is rebuilt only when the hash of its inputs (sources, WIT, tool versions, this file)
changes; the hash is kept in `<guest>.wasm.inputs`, and the output's own sha256 in
`<guest>.wasm.sha256`, which the engine uses to key its compiled-artifact cache.
"""

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import venv
from pathlib import Path

# The CPython release the guest links, and zlib (CPython's `zlib` module needs it): Debian's
# copies of the upstream tarballs, pinned by sha256.
CPYTHON_SOURCE = (
    "http://deb.debian.org/debian/pool/main/p/python3.13/python3.13_3.13.15.orig.tar.xz",
    "1e66a7945a48390ee4c2a4268a0e4185884059a13c4aab6d148aa208deea4a76",
)
ZLIB_SOURCE = (
    "http://deb.debian.org/debian/pool/main/z/zlib/zlib_1.3.dfsg+really1.3.2.orig.tar.gz",
    "7b6903eb019983987b7112eccf90f1703f1c6c0e0cede36564bf611d19ca579d",
)
# zig's clang and wasi-libc, from PyPI: the C compiler for wasm32-wasi.
ZIGLANG = "ziglang==0.17.0"
# Bumped when build_cpython_libraries' flags change, so the kept CPython build is redone.
CPYTHON_BUILD_KEY = "static-pymalloc-thinlto-nowrapv-pointer-pgo-5"
# Bumped when build_cpython_native's flags change.
NATIVE_BUILD_KEY = "o1-no-test-modules-1"
RUST_TARGET = "wasm32-wasip2"
ROOT = Path(__file__).resolve().parent.parent
GUESTS = ROOT / "wasm-guests"
OUT = ROOT / "target" / "guests"
VENV = ROOT / "target" / "guest-venv"
CPYTHON_WORK = ROOT / "target" / "cpython-guest"
# The execution profile CPython's C is optimised with: block counts from a training run of an
# instrumented guest, made by wasm-guests/cpython/pgo/profile.py (its README says how and why).
PGO_PROFILE = GUESTS / "cpython" / "pgo" / "cpython.profdata"
# A profile names a static function after its file's path unless told otherwise, and CPython
# compiles its files by absolute path: named after the file alone, a profile made in one checkout
# applies in any other. The training build and the optimised one both need this.
PGO_NAMING = "-mllvm -static-func-full-module-prefix=false"


def log(msg: str) -> None:
    print(f"[build-guests] {msg}", file=sys.stderr, flush=True)


def hash_inputs(paths, extra: str, include_self: bool = True) -> str:
    h = hashlib.sha256(extra.encode())
    if include_self:
        h.update(Path(__file__).read_bytes())
    for base in paths:
        if base.is_file():
            files = [base]
        else:
            files = sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        for p in files:
            h.update(str(p.relative_to(ROOT).as_posix()).encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


def venv_bin(name: str) -> Path:
    scripts = VENV / ("Scripts" if os.name == "nt" else "bin")
    exe = name + (".exe" if os.name == "nt" else "")
    return scripts / exe


def ensure_venv() -> Path:
    """The guests' build virtualenv under target/ (made once); returns its python."""
    python = venv_bin("python")
    if not python.exists():
        log(f"creating a virtualenv in {VENV.relative_to(ROOT)}")
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    return python


def up_to_date(wasm: Path, digest: str) -> bool:
    stamp = wasm.with_name(wasm.name + ".inputs")
    sha = wasm.with_name(wasm.name + ".sha256")
    return wasm.exists() and sha.exists() and stamp.exists() and stamp.read_text().strip() == digest


def finish(tmp: Path, wasm: Path, digest: str) -> None:
    sha = hashlib.sha256(tmp.read_bytes()).hexdigest()
    os.replace(tmp, wasm)
    wasm.with_name(wasm.name + ".sha256").write_text(sha + "\n")
    wasm.with_name(wasm.name + ".inputs").write_text(digest + "\n")
    log(f"built {wasm.relative_to(ROOT)} ({wasm.stat().st_size // 1024} KiB, sha256 {sha[:12]})")


def fetch(url: str, sha256: str, dest: Path) -> Path:
    """Downloads `url` to `dest` unless it is there already, and checks its sha256 either way."""
    if not dest.exists():
        log(f"downloading {url}")
        tmp = dest.with_name(dest.name + ".part")
        with urllib.request.urlopen(url, timeout=120) as response, open(tmp, "wb") as out:
            shutil.copyfileobj(response, out)
        os.replace(tmp, dest)
    got = hashlib.sha256(dest.read_bytes()).hexdigest()
    if got != sha256:
        dest.unlink()
        raise SystemExit(f"{dest.name}: sha256 {got}, expected {sha256} (deleted; run again to refetch)")
    return dest


def unpack(archive: Path, into: Path) -> Path:
    """Extracts `archive` (one top-level folder) under `into` once; returns that folder."""
    with tarfile.open(archive) as tar:
        top = tar.getnames()[0].split("/")[0]
        folder = into / top
        if not (folder / ".unpacked").exists():
            shutil.rmtree(folder, ignore_errors=True)
            tar.extractall(into, filter="data") if sys.version_info >= (3, 12) else tar.extractall(into)
            (folder / ".unpacked").touch()
    return folder


def ensure_zig() -> Path:
    """zig (PyPI's `ziglang`) in the guests' virtualenv, with `cc`, `ar` and `ranlib` wrappers for
    wasm32-wasi in CPYTHON_WORK/bin; returns that folder."""
    python = ensure_venv()
    zig = next(iter((VENV / "lib").glob("python3*/site-packages/ziglang/zig")), None)
    if zig is None or ZIGLANG.split("==")[1] not in run_out([str(zig), "version"]):
        log(f"installing {ZIGLANG} into {VENV.relative_to(ROOT)}")
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", ZIGLANG], check=True)
        zig = next((VENV / "lib").glob("python3*/site-packages/ziglang/zig"))
    bin_dir = CPYTHON_WORK / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, command in (("cc", "cc -target wasm32-wasi"), ("ar", "ar"), ("ranlib", "ranlib")):
        wrapper = bin_dir / f"wasm32-wasi-{name}"
        wrapper.write_text(f'#!/bin/sh\nexec "{zig}" {command} "$@"\n')
        wrapper.chmod(0o755)
    return bin_dir


def zig_lib() -> Path:
    """zig's own lib folder (its libc sources), beside the zig binary in the virtualenv."""
    return next((VENV / "lib").glob("python3*/site-packages/ziglang/lib"))


def run_out(cmd) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout
    except OSError:
        return ""


def make(cwd: Path, log_name: str, *args: str) -> None:
    """Runs make -j<cores> in `cwd`, its output in `log_name` there (printed when it fails)."""
    jobs = str(os.cpu_count() or 2)
    with open(cwd / log_name, "w") as out:
        done = subprocess.run(["make", "-j", jobs, *args], cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        sys.stderr.write((cwd / log_name).read_text()[-6000:])
        raise subprocess.CalledProcessError(done.returncode, "make")


def cpython_source_dir() -> Path:
    """Where CPYTHON_SOURCE unpacks: `Python-<version>` (its one top-level folder)."""
    version = CPYTHON_SOURCE[0].rsplit("_", 1)[1].split(".orig")[0]
    return CPYTHON_WORK / f"Python-{version}"


def profile_use_flags() -> str:
    """The flags that optimise CPython's C with PGO_PROFILE. Functions the profile does not know
    (never run in training, or changed since) are optimised without counts, as before, so clang's
    warnings about them are silenced.

    clang is given a copy named by the profile's sha256, not PGO_PROFILE itself: zig's compile
    cache keys an object by its command line, not by the files a flag names, so at one path a
    changed profile would leave every cached object compiled with the old one."""
    if not PGO_PROFILE.is_file():
        raise SystemExit(f"{PGO_PROFILE.relative_to(ROOT)} is missing: restore it from git, or make it anew with "
                         "wasm-guests/cpython/pgo/profile.py")
    data = PGO_PROFILE.read_bytes()
    named = CPYTHON_WORK / f"profile-{hashlib.sha256(data).hexdigest()[:16]}.profdata"
    if not named.exists():
        CPYTHON_WORK.mkdir(parents=True, exist_ok=True)
        tmp = named.with_name(named.name + ".part")
        tmp.write_bytes(data)
        os.replace(tmp, named)
    # Copies of earlier profiles (1.9 MB each) would otherwise pile up, one per profile change.
    for old in CPYTHON_WORK.glob("profile-*.profdata"):
        if old != named:
            old.unlink(missing_ok=True)
    return (f"-fprofile-use={named} {PGO_NAMING} -Wno-profile-instr-unprofiled -Wno-profile-instr-out-of-date"
            " -Wno-profile-instr-missing")


def build_cpython_libraries(bin_dir: Path) -> tuple:
    """Builds CPython for the build machine (the cross build's interpreter, and freeze.py's) and
    for wasm32-wasip1 as static libraries, with zlib; returns (native python, libs folder).

    Kept across guest builds: redone only when CPYTHON_BUILD_KEY (the sources, the configure
    answers, this function's flags) or the profile changes."""
    lto = cross_file_optimisation(bin_dir)
    # Not keyed by this file as a whole: CPYTHON_BUILD_KEY stands for the flags below.
    key = hash_inputs([GUESTS / "cpython" / "config.site", PGO_PROFILE],
                      "\0".join([*CPYTHON_SOURCE, *ZLIB_SOURCE, ZIGLANG, CPYTHON_BUILD_KEY, lto]), include_self=False)
    libs = CPYTHON_WORK / "libs"
    native = CPYTHON_WORK / "native" / "python"
    stamp = CPYTHON_WORK / "libraries.inputs"
    if stamp.exists() and stamp.read_text().strip() == key and native.exists():
        return native, libs
    flags = f"{lto} {profile_use_flags()}"
    native, zlib_prefix = build_cpython_native(bin_dir)
    collect_libraries(build_cpython_wasm(bin_dir, native, zlib_prefix, CPYTHON_WORK / "wasm", flags), libs)
    stamp.write_text(key + "\n")
    return native, libs


def collect_libraries(archives: dict, libs: Path) -> None:
    """Copies `archives` (file name: path, as build_cpython_wasm returns them) into a fresh `libs`."""
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir()
    for name, path in archives.items():
        shutil.copyfile(path, libs / name)


def build_cpython_native(bin_dir: Path) -> tuple:
    """Unpacks CPython and zlib, builds zlib for wasm32-wasi and CPython for the build machine;
    returns (native python, zlib's install prefix). Kept while its sources and zig stay the same."""
    key = hash_inputs([], "\0".join([*CPYTHON_SOURCE, *ZLIB_SOURCE, ZIGLANG, NATIVE_BUILD_KEY]), include_self=False)
    stamp = CPYTHON_WORK / "native.inputs"
    native, zlib_prefix = CPYTHON_WORK / "native" / "python", CPYTHON_WORK / "zlib"
    if stamp.exists() and stamp.read_text().strip() == key and native.exists() and (zlib_prefix / "lib" / "libz.a").exists():
        return native, zlib_prefix
    stamp.unlink(missing_ok=True)
    downloads = CPYTHON_WORK / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    source = unpack(fetch(CPYTHON_SOURCE[0], CPYTHON_SOURCE[1], downloads / CPYTHON_SOURCE[0].rsplit("/", 1)[1]), CPYTHON_WORK)
    zlib = unpack(fetch(ZLIB_SOURCE[0], ZLIB_SOURCE[1], downloads / ZLIB_SOURCE[0].rsplit("/", 1)[1]), CPYTHON_WORK)
    cc, ar, ranlib = (str(bin_dir / f"wasm32-wasi-{n}") for n in ("cc", "ar", "ranlib"))

    log("building zlib for wasm32-wasi")
    zlib_prefix = CPYTHON_WORK / "zlib"
    env = dict(os.environ, CC=cc, AR=ar, RANLIB=ranlib, CFLAGS="-O2")
    subprocess.run(["./configure", "--static", f"--prefix={zlib_prefix}"], cwd=zlib, env=env, check=True, stdout=subprocess.DEVNULL)
    make(zlib, "make.log", "libz.a")
    make(zlib, "install.log", "install")

    log("building CPython for this machine (the cross build needs one of the same version; about a minute)")
    native_dir = CPYTHON_WORK / "native"
    shutil.rmtree(native_dir, ignore_errors=True)
    native_dir.mkdir()
    # Only a build tool (the cross build's generators and freeze.py run on it), so it is built for
    # build time, not speed: -O1 and no test modules, 1.2 minutes on 2 cores where CPython's
    # defaults take 2.3 (docs/performance.md).
    subprocess.run([str(source / "configure"), "--without-ensurepip", "--disable-test-modules"], cwd=native_dir,
                   env=dict(os.environ, OPT="-DNDEBUG -O1"), check=True, stdout=subprocess.DEVNULL)
    make(native_dir, "make.log")
    stamp.write_text(key + "\n")
    return native, zlib_prefix


def build_cpython_wasm(bin_dir: Path, native: Path, zlib_prefix: Path, wasm_dir: Path, flags: str) -> dict:
    """Configures and makes CPython for wasm32-wasip1 in `wasm_dir`, its own C compiled with
    `flags` on top of CPython's; returns the static libraries the guest links, by file name
    (CPython's, its bundled libraries', zlib and WASI's emulation libraries)."""
    log("building CPython for wasm32-wasip1 (about 2 minutes)")
    source = cpython_source_dir()
    cc, ar = (str(bin_dir / f"wasm32-wasi-{n}") for n in ("cc", "ar"))
    shutil.rmtree(wasm_dir, ignore_errors=True)
    wasm_dir.mkdir(parents=True)
    sites = f"{source / 'Tools' / 'wasm' / 'config.site-wasm32-wasi'} {GUESTS / 'cpython' / 'config.site'}"
    # CPython's optimisation flags without its -g (the guest is stripped; debug info only slows
    # the link).
    env = dict(os.environ, CONFIG_SITE=sites, OPT="-DNDEBUG -O3 -Wall")
    # CPython asks for -fno-strict-overflow, which makes pointer arithmetic wrap as well as signed
    # integers (clang's -fwrapv-pointer). Then no field offset can go into a wasm load's offset
    # immediate (a third of the guest's loads and stores had an `i32.add` of their own). This
    # takes back the pointer half only: signed integers still wrap.
    cflags = "-D_WASI_EMULATED_MMAN -fno-wrapv-pointer"
    subprocess.run(
        [str(source / "configure"), "-C", "--host=wasm32-wasip1", "--build=" + run_out([str(source / "config.guess")]).strip(),
         f"--with-build-python={native}", "--with-pymalloc", "--disable-test-modules",
         "PKG_CONFIG_PATH=", "PKG_CONFIG_LIBDIR=/nonexistent", f"CC={cc}", f"AR={ar}", f"CPP={cc} -E",
         f"CFLAGS={cflags}", "LIBS=-lwasi-emulated-mman",
         f"ZLIB_CFLAGS=-I{zlib_prefix / 'include'}", f"ZLIB_LIBS=-L{zlib_prefix / 'lib'} -lz"],
        cwd=wasm_dir, env=env, check=True, stdout=subprocess.DEVNULL,
    )
    archives = {
        "libpython3.13.a": wasm_dir / "libpython3.13.a",
        "libmpdec.a": wasm_dir / "Modules/_decimal/libmpdec/libmpdec.a",
        "libexpat.a": wasm_dir / "Modules/expat/libexpat.a",
        "libHacl_Hash_SHA2.a": wasm_dir / "Modules/_hacl/libHacl_Hash_SHA2.a",
    }
    # `flags` go in CFLAGS_NODIST, as CPython's own PGO and LTO flags do: its objects get them,
    # configure's test programs (which -fprofile-generate could not link) do not.
    make(wasm_dir, "make.log", f"CFLAGS_NODIST=-Wno-date-time {flags}".strip(),
         *(str(p.relative_to(wasm_dir)) for p in archives.values()))
    archives["libz.a"] = zlib_prefix / "lib" / "libz.a"
    archives["libwasi-emulated.a"] = build_wasi_emulated(bin_dir)
    return archives


def build_wasi_emulated(bin_dir: Path) -> Path:
    """WASI's emulation libraries (mmap, signals, getpid, process clocks) CPython's configure asks
    for, compiled from zig's copy of wasi-libc's sources into one archive (the preview 2 libc
    rustc links has none of them)."""
    cc, ar = (str(bin_dir / f"wasm32-wasi-{n}") for n in ("cc", "ar"))
    emulated = CPYTHON_WORK / "emulated"
    shutil.rmtree(emulated, ignore_errors=True)
    emulated.mkdir()
    bottom = zig_lib() / "libc" / "wasi" / "libc-bottom-half"
    objects = []
    for name in ("mman/mman.c", "signal/signal.c", "getpid/getpid.c", "clocks/clock.c", "clocks/times.c", "clocks/getrusage.c"):
        obj = emulated / (Path(name).stem + ".o")
        subprocess.run([cc, "-c", "-O2", f"-I{bottom / 'cloudlibc' / 'src'}", str(bottom / name), "-o", str(obj)], check=True)
        objects.append(str(obj))
    # signal's `strsignal` is musl's, which wasi-libc builds into the same library.
    musl, wasi_musl = zig_lib() / "libc" / "musl" / "src", zig_lib() / "libc" / "wasi" / "libc-top-half" / "musl" / "src"
    obj = emulated / "strsignal.o"
    subprocess.run([cc, "-c", "-O2", "-D_WASI_EMULATED_SIGNAL", *(f"-I{d / sub}" for d in (wasi_musl, musl) for sub in ("include", "internal")),
                    str(musl / "string" / "strsignal.c"), "-o", str(obj)], check=True)
    objects.append(str(obj))
    archive = emulated / "libwasi-emulated.a"
    subprocess.run([ar, "rcs", str(archive), *objects], check=True)
    return archive


def cross_file_optimisation(bin_dir: Path) -> str:
    """`-flto=thin` when rust-lld can read the bitcode zig's clang writes (rustc's LLVM is at least
    clang's major version), else nothing. With it the archives hold LLVM bitcode, which rust-lld
    optimises across CPython's files when it links the guest: 5-15% faster compute
    (docs/performance.md)."""
    rust = re.search(r"LLVM version: (\d+)", run_out(["rustc", "-vV"]))
    clang = re.search(r"clang version (\d+)", run_out([str(bin_dir / "wasm32-wasi-cc"), "--version"]))
    if rust and clang and int(rust[1]) >= int(clang[1]):
        return "-flto=thin"
    log(f"building CPython without -flto: rustc's LLVM ({rust and rust[1]}) is older than zig's clang ({clang and clang[1]})")
    return ""


def build_cpython(force: bool) -> None:
    """Builds wasm-guests/cpython: CPython as static libraries, the C half, the frozen stdlib and
    the Rust half (cargo, wasm32-wasip2) into target/guests/cpython.wasm."""
    wasm = OUT / "cpython.wasm"
    crate = GUESTS / "cpython"
    inputs = [GUESTS / "wit", GUESTS / "common", crate / "src", crate / "c", crate / "py", crate / "Cargo.toml",
              crate / "Cargo.lock", crate / "build.rs", crate / "freeze.py", crate / "config.site", PGO_PROFILE]
    extra = "\0".join([rustc_version(), RUST_TARGET, *CPYTHON_SOURCE, *ZLIB_SOURCE, ZIGLANG, CPYTHON_BUILD_KEY])
    digest = hash_inputs(inputs, extra)
    if not force and up_to_date(wasm, digest):
        log(f"{wasm.relative_to(ROOT)} is up to date")
        return
    ensure_wasip2_target()
    bin_dir = ensure_zig()
    native, libs = build_cpython_libraries(bin_dir)
    built = link_cpython_guest(bin_dir, native, CPYTHON_WORK / "wasm", libs, CPYTHON_WORK / "cargo")
    tmp = OUT / "cpython.wasm.tmp"
    shutil.copyfile(built, tmp)
    finish(tmp, wasm, digest)


def link_cpython_guest(bin_dir: Path, native: Path, wasm_dir: Path, libs: Path, target_dir: Path, shim_flags=(),
                       shim_objects=()) -> Path:
    """Compiles c/shim.c (with `shim_flags`, against the pyconfig.h of the CPython build in
    `wasm_dir`) into `libs` beside `shim_objects`, freezes the Python and links the guest with
    cargo in `target_dir`; returns the component cargo wrote."""
    crate = GUESTS / "cpython"
    source = cpython_source_dir()
    log("compiling the guest's C half and freezing its Python")
    shim = libs / "shim.o"
    subprocess.run([str(bin_dir / "wasm32-wasi-cc"), "-c", "-O2", "-Wall", "-Werror", "-D_WASI_EMULATED_MMAN", *shim_flags,
                    f"-I{source / 'Include'}", f"-I{wasm_dir}", str(crate / "c" / "shim.c"), "-o", str(shim)],
                   check=True)
    (libs / "libcodecell_shim.a").unlink(missing_ok=True)
    subprocess.run([str(bin_dir / "wasm32-wasi-ar"), "rcs", str(libs / "libcodecell_shim.a"), str(shim), *map(str, shim_objects)],
                   check=True)
    frozen = CPYTHON_WORK / "frozen.bin"
    subprocess.run([str(native), "-I", "-S", "-B", str(crate / "freeze.py"), str(source / "Lib"), str(GUESTS / "common"),
                    str(crate / "py"), str(frozen)], check=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir), CODECELL_STATIC_LIBS=str(libs), CODECELL_FROZEN_BLOB=str(frozen))
    log("linking the CPython guest")
    subprocess.run(["cargo", "build", "--release", "--locked", "--target", RUST_TARGET], cwd=crate, env=env, check=True)
    return target_dir / RUST_TARGET / "release" / "codecell_guest_cpython.wasm"


def ensure_wasip2_target() -> None:
    out = subprocess.run(["rustup", "target", "list", "--installed"], capture_output=True, text=True)
    if out.returncode == 0 and RUST_TARGET in out.stdout.split():
        return
    log(f"adding the Rust target {RUST_TARGET}")
    subprocess.run(["rustup", "target", "add", RUST_TARGET], check=True)


def rustc_version() -> str:
    return subprocess.run(["rustc", "--version"], capture_output=True, text=True, check=True).stdout.strip()


def build_rustpython(force: bool) -> None:
    """Builds wasm-guests/rustpython with cargo (release, locked) into target/guests/rustpython.wasm."""
    wasm = OUT / "rustpython.wasm"
    crate = GUESTS / "rustpython"
    # Cargo's own output (target/rustpython-guest) never lies under the hashed folders.
    inputs = [GUESTS / "wit", GUESTS / "common", crate / "src", crate / "py", crate / "Cargo.toml", crate / "Cargo.lock",
              crate / "build.rs", ROOT / "vendor" / "rustpython-vm", ROOT / "vendor" / "rustpython-stdlib"]
    digest = hash_inputs(inputs, rustc_version() + "\0" + RUST_TARGET)
    if not force and up_to_date(wasm, digest):
        log(f"{wasm.relative_to(ROOT)} is up to date")
        return
    ensure_wasip2_target()
    target_dir = ROOT / "target" / "rustpython-guest"
    env = dict(os.environ, CARGO_TARGET_DIR=str(target_dir))
    log("compiling the RustPython guest (a clean build: about 18 CPU-minutes, 2.4 GB of memory, 1.6 GB of disk)")
    # rustpython 0.6.0 declares rust-version 1.95 but the ruff crates it needs (held at 0.16.5
    # in Cargo.lock) declare 1.96: they build with 1.95 all the same, hence --ignore-rust-version.
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--ignore-rust-version", "--target", RUST_TARGET],
        cwd=crate, env=env, check=True,
    )
    built = target_dir / RUST_TARGET / "release" / "codecell_guest_rustpython.wasm"
    tmp = OUT / "rustpython.wasm.tmp"
    shutil.copyfile(built, tmp)
    finish(tmp, wasm, digest)


BUILDERS = {"cpython": build_cpython, "rustpython": build_rustpython}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    parser.add_argument("--guest", action="append", choices=[*BUILDERS, "all"],
                        help="the guest to build (repeatable; default: cpython)")
    args = parser.parse_args()
    guests = args.guest or ["cpython"]
    if "all" in guests:
        guests = list(BUILDERS)
    OUT.mkdir(parents=True, exist_ok=True)
    try:
        for guest in dict.fromkeys(guests):
            BUILDERS[guest](args.force)
    except subprocess.CalledProcessError as e:
        log(f"failed: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
