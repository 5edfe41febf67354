# The training run of the CPython guest's profile (README.md beside this file). profile.py puts
# `PROGRAMS` (name -> source, the differential corpus) and `ROUNDS` above these lines and runs the
# result in the instrumented guest. Each program runs ROUNDS times, each time in a fresh
# namespace with its output discarded, so the counts are the programs' steady state rather than
# their first imports. The raw profile is printed last, base64 between two markers.
import base64
import contextlib
import io

import _codecell_host

failed = []
for _ in range(ROUNDS):
    for name, source in PROGRAMS.items():
        code = compile(source, name, "exec")
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(code, {"__name__": "__main__"})
        except BaseException as e:  # a program that fails still trained what it ran
            failed.append(f"{name}: {type(e).__name__}")

print("failed:", sorted(set(failed)))
print("-----BEGIN PROFILE-----")
print(base64.b64encode(_codecell_host.pgo_profile()).decode())
print("-----END PROFILE-----")
