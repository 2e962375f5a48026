"""Run Python code as if on another host: `python -m tests.faults.as_host HOST -c CODE ARGS…`.

In this process `socket.gethostname()` answers HOST, so `lib.jobclaim.this_worker` names the
job's worker "HOST:pid" and every other process of the test, on the real host name, can only
judge it by its heartbeat (`lib.jobclaim.gone`): the fault tests' second host. CODE sees
`sys.argv` as ["-c", ARGS…], as `python -c` would.
"""

from __future__ import annotations

import socket
import sys


def main() -> None:
    host, flag, code, *args = sys.argv[1:]
    if flag != "-c":
        raise SystemExit("usage: python -m tests.faults.as_host HOST -c CODE [ARGS…]")
    socket.gethostname = lambda: host
    sys.argv = ["-c", *args]
    exec(compile(code, "<as_host>", "exec"), {"__name__": "__main__"})


if __name__ == "__main__":
    main()
