"""Fake `spin`, compilers and verifiers (shell scripts; pan.c files that crash or hang) for the
missing-or-broken-tools and bounds suites."""
from __future__ import annotations

import shutil

REAL_SPIN = shutil.which("spin") or "/usr/bin/spin"
REAL_TCC = shutil.which("tcc") or "/usr/bin/tcc"

VERSION = 'if [ "$1" = "-V" ]; then echo "Spin Version 6.5.2 -- 6 December 2019"; exit 0; fi\n'


def spin_script(on_analyse: str, version: str = VERSION) -> str:
    """A `spin` that answers -V like SPIN 6.5.2 and runs `on_analyse` for `-a m.pml`; anything
    else (trail replay) goes to the real spin."""
    return ("#!/bin/sh\n" + version
            + 'case " $* " in *" -a "*)\n' + on_analyse + "\n;;\nesac\n"
            + f'exec {REAL_SPIN} "$@"\n')


def pan_c(body: str) -> str:
    return ("#include <signal.h>\n#include <stdio.h>\n#include <unistd.h>\n"
            "int main(int argc, char **argv) {\n" + body + "\nreturn 0; }\n")


def spin_writing_pan(c_source: str) -> str:
    """A `spin -a` that writes this C file as pan.c (the real compiler then builds it)."""
    return spin_script("/bin/cat > pan.c <<'CUTESPIN_EOF'\n" + c_source + "CUTESPIN_EOF\nexit 0")


SPIN_SEGFAULTS = spin_script("kill -SEGV $$")
SPIN_GARBAGE = spin_script("echo 'x@#%! 3.14159 ???'; /usr/bin/head -c 300 /dev/urandom | /usr/bin/od -c | /usr/bin/head -5\n"
                            "exit 0")
SPIN_GARBAGE_FAILS = spin_script("echo 'Segmentation fault (core dumped) or something'; exit 3")
SPIN_VERSION_GARBAGE = "#!/bin/sh\necho 'hello from not-spin 1.0'\nexit 0\n"
SPIN_VERSION_CRASH = "#!/bin/sh\nkill -SEGV $$\n"
# A spin -a that starts a grandchild and never finishes: the whole process group must go.
SPIN_HANGS = spin_script("/bin/sleep 1000 &\n/bin/sleep 1000")
PAN_SEGFAULTS = spin_writing_pan(pan_c("raise(SIGSEGV);"))
PAN_GARBAGE = spin_writing_pan(pan_c('printf("hello, I am not a verifier\\n");'))
PAN_ZERO_ERRORS_ONLY = spin_writing_pan(pan_c('printf("errors: 0\\n");'))  # no search summary at all
PAN_IGNORES_SIGINT = spin_writing_pan(pan_c("signal(SIGINT, SIG_IGN); for (;;) pause();"))
COMPILER_SEGFAULTS = "#!/bin/sh\nkill -SEGV $$\n"
COMPILER_FAILS = "#!/bin/sh\necho 'tcc: error: include file stdio.h not found' >&2\nexit 1\n"
COMPILER_HANGS = "#!/bin/sh\n/bin/sleep 1000 &\n/bin/sleep 1000\n"


def spin_recording_cwd_mode(record: str) -> str:
    """A `spin -a` that records the permissions of its working folder, then runs the real one."""
    return spin_script(f"/usr/bin/stat -c %a . > {record}")
