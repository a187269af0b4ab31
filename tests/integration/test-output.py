# SPDX-License-Identifier: LGPL-2.1-or-later
# Output capture is bounded: a program printing 1 GiB leaves the daemon's memory flat and the
# answer small, with exact byte and line counts; hostile bytes leave the JSON valid.
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lib import *  # noqa: E402,F401,F403

t = Tap()
KiB = 1024

rss_before = daemon_rss_kib()
code = ("import sys\nline = b'y' * 1023 + b'\\n'\nchunk = line * 1024\n"
        "for i in range(1024):\n    sys.stdout.buffer.write(chunk)\n")
r = run(code, limits={"timeout_ms": 120000})
rss_after = daemon_rss_kib()
t.verdict(r, "success", None, "1 GiB of stdout")
t.eq(r["stdout_bytes"], 1 << 30, "stdout_bytes counts every byte")
t.eq(r["stdout_lines"], 1 << 20, "stdout_lines counts every line")
t.eq(r["stdout_truncated"], True, "stdout marked truncated")
out = r["stdout"]
t.ok(out.startswith("y" * 1023 + "\n") and out.endswith("y" * 1023 + "\n"), "head and tail kept")
t.ok("bytes elided" in out, "elision marker present", out[64 * KiB - 100:64 * KiB + 200])
t.ok(len(out.encode()) <= 128 * KiB + 200, f"stored output is bounded ({len(out)} bytes)", len(out))
elided = (1 << 30) - 128 * KiB
t.ok(f"{elided} bytes elided" in out, "marker gives the exact number of elided bytes", out[64 * KiB - 10:64 * KiB + 80])
print(f"# daemon RSS before {rss_before} KiB, after 1 GiB of output {rss_after} KiB")
t.ok(rss_after - rss_before < 32 * 1024, f"daemon RSS grew {rss_after - rss_before} KiB (< 32 MiB)",
     (rss_before, rss_after))

# Bytes that are not UTF-8, NULs and control characters: the JSON stays valid, invalid bytes become U+FFFD.
r = run("import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe bad \\x00 nul \\x1b[31m esc \\xe2\\x82\\n')\n"
        "sys.stderr.buffer.write(b'\\xc0\\xaf')\n")
t.verdict(r, "success", None, "binary output")
t.ok("\ufffd" in r["stdout"] and "ok " in r["stdout"] and "\x00" not in r["stdout"],
     "invalid bytes replaced by U+FFFD", repr(r["stdout"]))
t.eq(r["stdout_bytes"], 29, "binary stdout counted in bytes")
t.ok(r["stderr"] and set(r["stderr"]) == {"\ufffd"}, "overlong encoding replaced", repr(r["stderr"]))

# Exact counts without truncation, and a final line without a newline.
r = run("print('a\\nb\\nc', end='')")
t.eq((r["stdout"], r["stdout_bytes"], r["stdout_lines"], r["stdout_truncated"]), ("a\nb\nc", 5, 3, False),
     "unterminated last line counted")
r = run("import sys\nsys.stdout.write('x' * (128 * 1024))\n")
t.eq((r["stdout_bytes"], r["stdout_truncated"], len(r["stdout"])), (128 * 1024, False, 128 * 1024),
     "exactly head + tail is not truncated")
r = run("import sys\nsys.stdout.write('x' * (128 * 1024 + 1))\n")
t.ok(r["stdout_truncated"] and "1 bytes elided" in r["stdout"], "one byte over is truncated by one byte",
     r["stdout"][64 * KiB - 10: 64 * KiB + 60])

# Both streams at once, interleaved at high volume: no deadlock, both complete.
r = run("import sys\nfor i in range(20000):\n    sys.stdout.write('o' * 100 + '\\n'); sys.stderr.write('e' * 100 + '\\n')\n")
t.verdict(r, "success", None, "interleaved stdout and stderr")
t.eq((r["stdout_lines"], r["stderr_lines"]), (20000, 20000), "both streams fully counted")

t.done()
