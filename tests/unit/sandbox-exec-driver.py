#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs the built sandbox-exec directly (no systemd), playing the daemon's part: a socketpair as
its stdin, a temporary workspace, the real BPF filters and the real language rows (all from
dump-seccomp-bpf). One case per invocation; exit 0 if it passed. Standard library only.

Usage: sandbox-exec-driver.py SANDBOX_EXEC DUMP_SECCOMP_BPF CASE
       sandbox-exec-driver.py --list

Run as root, sandbox-exec runs as root (as ExecStart=! starts it) and runs the program as UID
UNPRIVILEGED (--uid), a number nothing else on the host uses, as DynamicUser= would give it: the cases
that attack the supervisor from the program are meaningful only so. Without root, --same-user. The
source goes to a temporary --code-dir (SANDBOX_CODE_DIR inside a unit)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading

# Not nobody: sandbox-exec's sweep kills every process of the program's UID when it ends. One of
# its own per test run (from the PID of test-sandbox-exec.sh, which runs the cases one by one), so
# that two runs side by side never kill each other's programs.
UNPRIVILEGED = 2147000000 + (int(os.environ.get('SANDBOX_EXEC_TEST_RUN', os.getppid())) % 1000000)
CODE_DIR = '/run/sandbox'


class Failure(Exception):
    pass


class Skip(Exception):
    """The case needs what this machine lacks; exit 77 and say why."""


def check(cond, what, result=None):
    if not cond:
        msg = what
        if result is not None:
            msg += '\n' + result.describe()
        raise Failure(msg)


class Result:
    # The report is text ("key=value" lines), an empty line, then the program's captured output:
    # stdout head and tail, stderr head and tail, of the sizes the text announced. The program's
    # stdout/stderr reach us only that way; what sandbox-exec itself writes to its fds 1 and 2
    # (unit_stdout/unit_stderr) must be nothing.
    def __init__(self, raw, unit_stdout, unit_stderr, returncode):
        text, sep, rest = raw.partition(b'\n\n')
        self.report_text = (text + (b'\n' if sep else b'')).decode(errors='replace')
        self.report = {}
        for line in self.report_text.splitlines():
            k, sep2, v = line.partition('=')
            if sep2:
                self.report[k] = v
        sizes = [int(self.report.get(k, '0') or 0) for k in
                 ('stdout_head', 'stdout_tail', 'stderr_head', 'stderr_tail')]
        parts, off = [], 0
        for n in sizes:
            parts.append(rest[off:off + n])
            off += n
        self.trailing = len(rest) - off
        self.stdout = (parts[0] + parts[1]).decode(errors='replace')
        self.stderr = (parts[2] + parts[3]).decode(errors='replace')
        self.unit_stdout = unit_stdout
        self.unit_stderr = unit_stderr
        self.returncode = returncode

    def describe(self):
        return ('# report: %r\n# stdout: %r\n# stderr: %r\n# exit: %d'
                % (self.report_text, self.stdout[-2000:], self.stderr[-2000:], self.returncode))


class Env:
    def __init__(self, sandbox_exec, dump):
        self.sandbox_exec = sandbox_exec
        self.dump = dump
        self.bpf = subprocess.run([dump], check=True, stdout=subprocess.PIPE).stdout
        self.drop = os.geteuid() == 0
        self.tmpdirs = []
        self.code_dir = os.path.join(tempfile.mkdtemp(prefix='sandbox-exec-code.'), 'code')
        self.tmpdirs.append(os.path.dirname(self.code_dir))
        os.chmod(os.path.dirname(self.code_dir), 0o755)

    def cleanup(self):
        for d in self.tmpdirs:
            shutil.rmtree(d, ignore_errors=True)

    def mkdtemp(self):
        d = tempfile.mkdtemp(prefix='sandbox-exec-test.')
        self.tmpdirs.append(d)
        if self.drop:
            os.chown(d, UNPRIVILEGED, UNPRIVILEGED)
        return d

    def filter(self, name):
        """The seccomp filter the daemon sends for language NAME (its row's extra_syscalls)."""
        return subprocess.run([self.dump, '--filter', name], check=True, stdout=subprocess.PIPE).stdout

    def language(self, name):
        out = subprocess.run([self.dump, '--language', name], check=True,
                             stdout=subprocess.PIPE).stdout
        fields = out.split(b'\0')[:-1]
        row = {'compile': [], 'run': [], 'check': [], 'env': []}
        for k, v in zip(fields[0::2], fields[1::2]):
            k, v = k.decode(), v.decode()
            v = v.replace(CODE_DIR + '/', self.code_dir + '/')
            if k in row and isinstance(row[k], list):
                row[k].append(v)
            else:
                row[k] = v
        return row

    def run_raw(self, args, payload, workspace=None, timeout=60, extra_env=(), prefix=()):
        """Start sandbox-exec with args (after the command prefix, e.g. strace), send payload over
        the control channel, collect everything."""
        workspace = workspace or self.mkdtemp()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        env = {'PATH': '/usr/bin:/bin', 'LANG': 'C.UTF-8', 'HOME': workspace}
        for kv in extra_env:
            k, _, v = kv.partition('=')
            env[k] = v

        who = ['--uid', str(UNPRIVILEGED)] if self.drop else ['--same-user']
        argv = (list(prefix) + [self.sandbox_exec, '--workspace', workspace, '--code-dir', self.code_dir] + who
                + list(args))
        proc = subprocess.Popen(argv, stdin=theirs.fileno(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env, close_fds=True)
        theirs.close()

        def send():
            try:
                ours.sendall(payload)
                # As the daemon does: nothing more will come, so a short payload is an EOF for
                # the helper rather than a wait until the unit's RuntimeMaxSec.
                ours.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the helper may refuse early and close; that is what some cases test

        sender = threading.Thread(target=send, daemon=True)
        sender.start()

        chunks = []

        def receive():
            while True:
                try:
                    b = ours.recv(65536)
                except OSError:
                    break
                if not b:
                    break
                chunks.append(b)

        receiver = threading.Thread(target=receive, daemon=True)
        receiver.start()
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise Failure('sandbox-exec timed out')
        receiver.join(timeout)
        ours.close()
        return Result(b''.join(chunks), stdout.decode(errors='replace'),
                      stderr.decode(errors='replace'), proc.returncode)

    def payload(self, code, bpf=None):
        bpf = self.bpf if bpf is None else bpf
        return b'SANDBOXD-EXEC 1 %d %d\n' % (len(bpf), len(code)) + bpf + code

    def run_lang(self, lang, code, extra_args=(), workspace=None, timeout=60, prefix=()):
        row = self.language(lang)
        args = ['--source', row['source']]
        for a in row['compile']:
            args += ['--compile-arg', a]
        for a in row['check']:
            args += ['--check-arg', a]
        args += list(extra_args)
        args += ['--'] + row['run']
        if isinstance(code, str):
            code = code.encode()
        return self.run_raw(args, self.payload(code, self.filter(lang)), workspace=workspace,
                            extra_env=row['env'], timeout=timeout, prefix=prefix)


def expect(r, phase, exit_code=None, signal=None):
    check(r.report.get('phase') == phase, 'expected phase=%s' % phase, r)
    if exit_code is not None:
        check(r.report.get('exit') == str(exit_code), 'expected exit=%d' % exit_code, r)
        if exit_code >= 0:
            check(r.returncode == exit_code, 'helper exit status should mirror the program', r)
    if signal is not None:
        check(r.report.get('signal') == str(signal), 'expected signal=%d' % signal, r)
    for key in ('oom_kill', 'mem_peak', 'mem_failcnt', 'pids_max', 'disk_full', 'cpu_usec'):
        check(r.report.get(key, '').isdigit(), 'report lacks %s' % key, r)


CASES = {}


def case(f):
    CASES[f.__name__.replace('_', '-')] = f
    return f


@case
def python_hello(env):
    r = env.run_lang('python', 'print("hello")\n')
    expect(r, 'run', 0, 0)
    check(r.stdout == 'hello\n', 'stdout', r)


@case
def python_main_module(env):
    code = ('import sys, os\n'
            'assert __name__ == "__main__"\n'
            'assert sys.modules["__main__"].__dict__ is globals()\n'
            'assert sys.argv == [CODE + "/main.py"], sys.argv\n'
            'assert sys.path[0] == os.getcwd(), sys.path\n'
            'assert __file__ == CODE + "/main.py", __file__\n'
            'assert not sys.flags.no_site and sys.flags.no_user_site\n'
            'assert sys.stdin.read() == ""\n'
            'assert "_sandboxd_main" not in globals()\n'
            'assert open("/proc/self/oom_score_adj").read().strip() == "1000"\n'
            'print("ok")\n')
    r = env.run_lang('python', 'CODE = %r\n' % env.code_dir + code)
    expect(r, 'run', 0)
    check(r.stdout == 'ok\n', 'stdout', r)


@case
def python_syntax_error(env):
    r = env.run_lang('python', 'print("a"\n')
    expect(r, 'compile', 1)
    check('main.py", line 1' in r.stderr and 'SyntaxError' in r.stderr,
          'Python-style syntax error on stderr', r)


@case
def python_exception(env):
    r = env.run_lang('python', 'def f():\n    raise ValueError("boom")\nf()\n')
    expect(r, 'run', 1)
    check('Traceback (most recent call last)' in r.stderr and 'ValueError: boom' in r.stderr,
          'traceback on stderr', r)
    check('line 3' in r.stderr and '<string>' not in r.stderr,
          'traceback without the bootstrap frame', r)


@case
def python_sys_exit(env):
    r = env.run_lang('python', 'import sys\nprint("x")\nsys.exit(5)\n')
    expect(r, 'run', 5)
    check(r.stdout == 'x\n', 'stdout flushed', r)


@case
def node_hello(env):
    r = env.run_lang('node', 'console.log("hello");\n')
    expect(r, 'run', 0, 0)
    check(r.stdout == 'hello\n', 'stdout', r)


@case
def node_commonjs(env):
    code = ('if (require.main !== module) throw new Error("not main");\n'
            'console.log(require("path").basename(__filename));\n'
            'return;\n'
            'console.log("not reached");\n')
    r = env.run_lang('node', code)
    expect(r, 'run', 0)
    check(r.stdout == 'main.js\n', 'stdout', r)


@case
def node_syntax_error(env):
    r = env.run_lang('node', 'let a = 1;\nconsole.log(\n')
    expect(r, 'compile', 1)
    check('main.js:' in r.stderr and 'SyntaxError' in r.stderr, 'Node-style syntax error', r)
    check('    at ' not in r.stderr, 'no bootstrap stack frames', r)


@case
def node_exception(env):
    r = env.run_lang('node', 'throw new Error("boom");\n')
    expect(r, 'run', 1)
    check('Error: boom' in r.stderr, 'error on stderr', r)


@case
def bash_exit_3(env):
    r = env.run_lang('bash', 'echo hi\nexit 3\n')
    expect(r, 'run', 3, 0)
    check(r.stdout == 'hi\n', 'stdout', r)


@case
def bash_syntax_error(env):
    r = env.run_lang('bash', 'echo before\nif then fi (\n')
    expect(r, 'compile')
    check(r.report.get('exit') not in ('0', None), 'non-zero compile exit', r)
    check('before' not in r.stdout, 'the script must not have run', r)


@case
def sigsegv(env):
    r = env.run_lang('bash', 'kill -SEGV $$\n')
    expect(r, 'run', -1, 11)
    check(r.returncode == 128 + 11, 'helper exits 128+signal', r)


@case
def proc_mem_of_helper(env):
    code = ('import os\n'
            'ppid = os.getppid()\n'
            'try:\n'
            '    os.close(os.open("/proc/%d/mem" % ppid, os.O_RDONLY))\n'
            '    print("OPENED mem")\n'
            'except OSError as e:\n'
            '    print("DENIED", e.errno)\n'
            'try:\n'
            '    print("OPENED fd", os.listdir("/proc/%d/fd" % ppid))\n'
            'except OSError as e:\n'
            '    print("DENIED", e.errno)\n')
    r = env.run_lang('python', code)
    expect(r, 'run', 0)
    check('OPENED' not in r.stdout and r.stdout.count('DENIED') == 2,
          'the program must not open the helper\'s memory or fds', r)


@case
def no_fd_leak(env):
    code = ('import os\n'
            'fds = sorted(int(x) for x in os.listdir("/proc/self/fd"))\n'
            'print(" ".join(map(str, fds)))\n')
    r = env.run_lang('python', code)
    expect(r, 'run', 0)
    # 0, 1, 2 and the directory fd listdir() itself holds
    fds = [int(x) for x in r.stdout.split()]
    check(fds[:3] == [0, 1, 2] and len(fds) == 4, 'only stdio reaches the program', r)


@case
def filter_active(env):
    code = ('import socket, errno\n'
            'try:\n'
            '    socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n'
            '    print("inet allowed")\n'
            'except OSError as e:\n'
            '    print(errno.errorcode[e.errno])\n'
            'socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close()\n')
    r = env.run_lang('python', code)
    expect(r, 'run', 0)
    check(r.stdout == 'EAFNOSUPPORT\n', 'seccomp filter loaded in the program', r)


@case
def source_symlink_not_followed(env):
    # A symlink planted where the source goes is replaced, never written through; and the source
    # is not in the workspace at all, so a workspace's main.py (a session's leftover, a directory)
    # neither receives it nor gets in the way.
    ws = env.mkdtemp()
    outside = os.path.join(env.mkdtemp(), 'victim')
    with open(outside, 'w') as f:
        f.write('untouched')
    os.makedirs(env.code_dir, exist_ok=True)
    os.symlink(outside, os.path.join(env.code_dir, 'main.py'))
    os.symlink(outside, os.path.join(ws, 'main.py'))
    os.mkdir(os.path.join(ws, 'main.js'))
    r = env.run_lang('python', 'print("fresh")\n', workspace=ws)
    expect(r, 'run', 0)
    check(r.stdout == 'fresh\n', 'stdout', r)
    with open(outside) as f:
        check(f.read() == 'untouched', 'the symlink target must not be written', r)
    check(not os.path.islink(os.path.join(env.code_dir, 'main.py')), 'symlink replaced by the source', r)
    check(os.path.islink(os.path.join(ws, 'main.py')), 'the workspace is not where the source goes', r)
    r = env.run_lang('node', 'console.log("node too")\n', workspace=ws)
    expect(r, 'run', 0)
    check(r.stdout == 'node too\n', 'a directory named main.js in the workspace is no obstacle', r)


@case
def workspace_dirs_made(env):
    ws = env.mkdtemp()
    r = env.run_lang('bash', 'test -d input && test -d output && touch output/x && echo ok\n', workspace=ws)
    expect(r, 'run', 0)
    check(r.stdout == 'ok\n', 'input/ and output/ exist and output/ is writable', r)
    if env.drop:
        check(os.stat(os.path.join(ws, 'output')).st_uid == UNPRIVILEGED, 'made by the program\'s user', r)


@case
def forged_compile_error(env):
    # The program prints what a syntax error prints and exits 1: only the checker, in a process of
    # its own, may call it a compile error.
    r = env.run_lang('python', 'import sys\nsys.stderr.write(\'  File "main.py", line 1\\nSyntaxError: forged\\n\')\n'
                     'sys.exit(1)\n')
    expect(r, 'run', 1)
    r = env.run_lang('node', 'process.stderr.write("SyntaxError: forged\\n"); process.exit(1);\n')
    expect(r, 'run', 1)
    # ... and a real one still is.
    r = env.run_lang('node', 'function (\n')
    expect(r, 'compile', 1)


@case
def supervisor_unreachable(env):
    # The program's own attacks on its supervisor: signals (cancel forgery, stop, kill), ptrace,
    # its /proc. Only meaningful when the program runs as another user (as root).
    if not env.drop:
        print('# not root: the program runs as sandbox-exec\'s own user; nothing to check')
        return
    code = ('import os, signal, ctypes, errno\n'
            'pp = os.getppid()\n'
            'for sig in (signal.SIGUSR1, signal.SIGSTOP, signal.SIGKILL, signal.SIGTERM):\n'
            '    try:\n'
            '        os.kill(pp, sig); print("SENT", int(sig))\n'
            '    except OSError as e:\n'
            '        print("denied", errno.errorcode[e.errno])\n'
            'libc = ctypes.CDLL(None, use_errno=True)\n'
            'r = libc.ptrace(16, pp, 0, 0)\n'  # PTRACE_ATTACH
            'print("ptrace", r, errno.errorcode.get(ctypes.get_errno()))\n'
            # status is world-readable without a unit's ProtectProc=invisible (the integration
            # tests check that); environ, mem and fd are the helper's own.
            'for f in ("environ", "mem", "fd"):\n'
            '    try:\n'
            '        (os.listdir if f == "fd" else open)("/proc/%d/%s" % (pp, f)); print("OPENED", f)\n'
            '    except OSError as e:\n'
            '        print("denied", f)\n'
            'print("still here", flush=True)\n')
    r = env.run_lang('python', code)
    expect(r, 'run', 0)
    check('SENT' not in r.stdout and 'OPENED' not in r.stdout, 'no signal, no /proc file reached the helper', r)
    check('ptrace -1' in r.stdout, 'ptrace refused', r)
    check(r.report.get('cancelled') == '0', 'no cancel was forged', r)
    # kill -9 -1 from bash: every other process of the program's user dies (kill(2) spares the
    # caller), the helper lives on and reports all of it.
    r = env.run_lang('bash', 'echo before-kill\nsleep 30 &\nkill -9 -1\nwait $!; echo "after $?"\n')
    expect(r, 'run', 0, 0)
    check(r.stdout == 'before-kill\nafter 137\n', 'the sleep was killed, the output is whole', r)


@case
def escaped_processes_swept(env):
    # A daemonized grandchild (setsid, double fork) does not outlive the run: the sweep kills every
    # process of the program's user before the report.
    if not env.drop:
        print('# not root: no sweep without a user of its own')
        return
    marker = os.path.join(env.mkdtemp(), 'alive')
    code = ('import os, time\n'
            'if os.fork() == 0:\n'
            '    os.setsid()\n'
            '    if os.fork() == 0:\n'
            '        time.sleep(1.5)\n'
            '        open(%r, "w").write("survived")\n'
            '    os._exit(0)\n'
            'print("parent done")\n' % marker)
    os.chmod(os.path.dirname(marker), 0o777)
    r = env.run_lang('python', code)
    expect(r, 'run', 0)
    import time
    time.sleep(2.5)
    check(not os.path.exists(marker), 'the escaped grandchild was killed', r)


@case
def cgroup_counters(env):
    cg = env.mkdtemp()
    os.makedirs(os.path.join(cg, 'memory'))
    os.makedirs(os.path.join(cg, 'pids'))
    os.makedirs(os.path.join(cg, 'unified'))
    files = {
        'memory/memory.oom_control': 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n',
        'memory/memory.max_usage_in_bytes': '123456789\n',
        'memory/memory.failcnt': '7\n',
        'pids/pids.events': 'max 4\n',
        'unified/cpu.stat': 'usage_usec 4242\nuser_usec 4000\nsystem_usec 242\n',
    }
    for name, text in files.items():
        with open(os.path.join(cg, name), 'w') as f:
            f.write(text)
    r = env.run_lang('bash', 'exit 0\n', extra_args=['--cgroup-dir', cg])
    expect(r, 'run', 0)
    want = {'oom_kill': '2', 'mem_peak': '123456789', 'mem_failcnt': '7', 'pids_max': '4',
            'cpu_usec': '4242'}
    for k, v in want.items():
        check(r.report.get(k) == v, 'expected %s=%s' % (k, v), r)


@case
def compile_step_failure_stops(env):
    row = env.language('bash')
    args = ['--source', 'main.sh', '--compile-arg', '/bin/sh', '--compile-arg', '-c',
            '--compile-arg', 'echo compiling; exit 4', '--'] + row['run']
    r = env.run_raw(args, env.payload(b'echo ran\n'))
    expect(r, 'compile', 4)
    check('compiling' in r.stdout and 'ran' not in r.stdout, 'run step skipped', r)


@case
def bad_header(env):
    r = env.run_raw(['--source', 'main.sh', '--', '/bin/bash', 'main.sh'],
                    b'SANDBOXD-EXEC 2 8 0\n' + b'\0' * 8)
    expect(r, 'setup', -1)
    check(r.returncode == 1 and r.report.get('error'), 'error reported, exit 1', r)
    for bad in (b'SANDBOXD-EXEC 1 08 0\n', b'SANDBOXD-EXEC 1 +8 0\n', b'SANDBOXD-EXEC 1 8  0\n',
                b'SANDBOXD-EXEC 1 8 0 \n', b'SANDBOXD-EXEC 1 8\n', b'SANDBOXD-EXEC 1 12 0\n',
                b'SANDBOXD-EXEC 1 0 0\n', b'SANDBOXD-EXEC 1 99999999999999999999999 0\n',
                b'SANDBOXD-EXEC 1 8 ' + b'1' * 60 + b'\n', b'SANDBOXD-EXEC 1 8 0'):
        r = env.run_raw(['--source', 'main.sh', '--', '/bin/bash', 'main.sh'], bad + b'\0' * 8)
        expect(r, 'setup')
        check(r.returncode == 1, 'exit 1 for %r' % bad, r)


@case
def short_read(env):
    r = env.run_raw(['--source', 'main.sh', '--', '/bin/bash', 'main.sh'],
                    b'SANDBOXD-EXEC 1 %d 100\n' % len(env.bpf) + env.bpf + b'echo')
    expect(r, 'setup')


@case
def source_too_large(env):
    code = b'#' * 2048 + b'\n'
    row = env.language('bash')
    r = env.run_raw(['--source', 'main.sh', '--max-source', '1024', '--'] + row['run'],
                    env.payload(code))
    expect(r, 'setup', -1)
    check('too large' in r.report.get('error', ''), 'error says why', r)


@case
def exec_failure(env):
    r = env.run_raw(['--source', 'main.sh', '--', '/nonexistent/runtime', 'main.sh'],
                    env.payload(b'echo\n'))
    expect(r, 'setup')
    check('/nonexistent/runtime' in r.report.get('error', ''), 'error names the program', r)


@case
def timeout_kills_the_program(env):
    r = env.run_lang('python', 'import sys\nprint("before", flush=True)\nwhile True: pass\n',
                     extra_args=['--timeout-ms', '500'])
    expect(r, 'run', -1, 9)
    check(r.report.get('timeout') == '1', 'timeout=1 reported', r)
    check(r.stdout == 'before\n', 'output before the deadline is kept', r)
    check(400000 <= int(r.report.get('run_usec', '0')) < 5000000, 'run_usec near the deadline', r)


@case
def output_captured_head_and_tail(env):
    r = env.run_lang('python', 'import sys\nfor i in range(100000):\n    print(i)\n',
                     extra_args=['--head-bytes', '100', '--tail-bytes', '50'])
    expect(r, 'run', 0, 0)
    total = sum(len('%d\n' % i) for i in range(100000))
    check(r.report.get('stdout_bytes') == str(total) and r.report.get('stdout_lines') == '100000',
          'whole stream counted', r)
    check(r.report.get('stdout_head') == '100' and r.report.get('stdout_tail') == '50', 'bounded parts', r)
    check(r.stdout.startswith('0\n1\n2\n') and r.stdout.endswith('99998\n99999\n'), 'head and tail kept', r)
    check(r.trailing == 0, 'nothing after the announced parts', r)
    check(r.unit_stdout == '' and r.unit_stderr == '', 'nothing on sandbox-exec\'s own stdout/stderr', r)


@case
def workloads_no_enosys(env):
    # The programs behind the allow-list, each with its language's filter, under strace: none of
    # their system calls may meet the filter's ENOSYS (clone3 alone is meant to, glibc falls back
    # to clone, and is not traced), and each must get to its end.
    strace = shutil.which('strace')
    if not strace:
        raise Skip('strace is not installed')
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
    from syscall_workloads import WORKLOADS
    for name, (lang, code) in WORKLOADS.items():
        log = os.path.join(env.mkdtemp(), 'trace')
        r = env.run_lang(lang, code, timeout=240,
                         prefix=[strace, '-f', '-qq', '-Z', '-e', 'trace=!clone3', '-o', log])
        check(r.report.get('phase') == 'run' and r.report.get('exit') == '0', name + ' ran', r)
        check(r.stdout.strip().splitlines()[-1:] == ['ok ' + name], name + ' got to its end', r)
        with open(log, errors='replace') as f:
            enosys = [line.strip() for line in f if 'ENOSYS' in line]
        check(not enosys, '%s met ENOSYS:\n%s' % (name, '\n'.join(enosys[:20])))


@case
def relative_program_refused(env):
    r = env.run_raw(['--source', 'main.sh', '--', 'bash', 'main.sh'], env.payload(b'echo\n'))
    expect(r, 'setup')


def main():
    if sys.argv[1:] == ['--list']:
        print('\n'.join(CASES))
        return 0
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    env = Env(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    try:
        CASES[sys.argv[3]](env)
    except Failure as e:
        for line in str(e).splitlines():
            print('# ' + line if not line.startswith('#') else line)
        return 1
    except Skip as e:
        print('# skipped: %s' % e)
        return 77
    finally:
        env.cleanup()
    return 0


if __name__ == '__main__':
    sys.exit(main())
