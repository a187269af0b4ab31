/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The LanguageRunner table. A row says where the code goes, what runs it and how a syntax error is
 * told apart from a runtime failure. sandbox-exec runs these argvs inside the unit, as the program's
 * user, with the workspace as the working directory; the source is SANDBOX_CODE_DIR/<source_name>. */

#include <unistd.h>

#include "language.h"
#include "util.h"

#define STRV(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* Python: compile first so a SyntaxError is reported as such and the program does not run; then run
 * the code object as __main__, as "python3 FILE" would: fresh module dict registered in sys.modules
 * (pickle, multiprocessing and "if __name__ == '__main__'" work), sys.argv=[FILE], sys.path[0] the
 * working directory (the workspace, so a session's own modules import). The source file name comes
 * from argv[1] so the bootstrap is the same for any row. The workspace's .pkgs/ (where pip installs in a
 * run with network: PIP_TARGET=) comes next on sys.path when it exists, so that a later turn of a
 * session, with network or without, imports what an earlier one installed. Tracebacks skip the bootstrap's own frame.
 * Whether a failure was a syntax error is decided afterwards by PYTHON_CHECK in a fresh process
 * (Language.check_argv), never by anything this process says. (excepthook prints e.__traceback__,
 * not its tb argument, hence with_traceback().)
 *
 * -s: no user site directory. HOME is the workspace, so a session turn that wrote
 * ~/.local/lib/python3.X/site-packages/x.pth would otherwise run code at the start of every later turn,
 * before this bootstrap. Not -I (which implies -E): PYTHONHASHSEED=0 must keep working. */
#define PYTHON_BOOTSTRAP_MAIN                                                                                \
        "import sys, os\n"                                                                                   \
        "def _sandboxd_main():\n"                                                                            \
        "    name = sys.argv[1]\n"                                                                           \
        "    cwd = os.getcwd()\n"                                                                            \
        "    try:\n"                                                                                         \
        "        with open(name, 'rb') as f:\n"                                                              \
        "            src = f.read()\n"                                                                       \
        "        code = compile(src, name, 'exec', dont_inherit=True)\n"                                     \
        "    except (SyntaxError, ValueError) as e:\n"                                                       \
        "        import traceback\n"                                                                         \
        "        sys.stderr.write(''.join(traceback.format_exception_only(type(e), e)))\n"                   \
        "        sys.stderr.flush()\n"                                                                       \
        "        sys.exit(1)\n"                                                                              \
        "    import types\n"                                                                                 \
        "    m = types.ModuleType('__main__')\n"                                                             \
        "    m.__file__ = name\n"                                                                            \
        "    m.__cached__ = None\n"                                                                          \
        "    sys.modules['__main__'] = m\n"                                                                  \
        "    sys.argv[:] = [name]\n"                                                                         \
        "    if sys.path and sys.path[0] == '':\n"                                                           \
        "        sys.path[0] = cwd\n"                                                                        \
        "    else:\n"                                                                                        \
        "        sys.path.insert(0, cwd)\n"                                                                  \
        "    pkgs = os.path.join(cwd, '.pkgs')\n"                                                             \
        "    if pkgs not in sys.path and os.path.isdir(pkgs):\n"                                              \
        "        sys.path.insert(1, pkgs)\n"                                                                  \
        "    try:\n"                                                                                         \
        "        exec(code, m.__dict__)\n"                                                                   \
        "    except SystemExit:\n"                                                                           \
        "        raise\n"                                                                                    \
        "    except BaseException as e:\n"                                                                   \
        "        tb = e.__traceback__.tb_next\n"                                                             \
        "        sys.excepthook(type(e), e.with_traceback(tb), tb)\n"                                        \
        "        sys.exit(1)\n"

#define PYTHON_BOOTSTRAP PYTHON_BOOTSTRAP_MAIN "_sandboxd_main()\n"

/* The warm bootstrap (sandbox-exec --warm-preload): the same as PYTHON_BOOTSTRAP, after a wait. It
 * imports what the pool preloads (argv[2], comma-separated; a module that fails to import is left
 * out, as if not preloaded), says 'R' on fd 3, and reads the claim's environment ("KEY=VALUE\0"...)
 * until EOF. Every entry is set (the block is the whole environment a cold run of the request would
 * have: the fixed one, the language's, the seed and the request's, so nothing of the pool's own
 * remains), then the program runs as PYTHON_BOOTSTRAP runs it. The program can tell only by
 * sys.modules: the preloaded modules (and what they import) are there already. */
#define PYTHON_WARM_WAIT                                                                                     \
        "import sys, os\n"                                                                                   \
        "def _sandboxd_wait():\n"                                                                            \
        "    for m in sys.argv[2].split(','):\n"                                                             \
        "        if m:\n"                                                                                    \
        "            try:\n"                                                                                 \
        "                __import__(m)\n"                                                                    \
        "            except BaseException:\n"                                                                \
        "                pass\n"                                                                             \
        "    del sys.argv[2:]\n"                                                                             \
        "    import gc\n"                                                                                    \
        "    gc.freeze()\n"                                                                                  \
        "    os.write(3, b'R')\n"                                                                            \
        "    chunks = []\n"                                                                                  \
        "    while True:\n"                                                                                  \
        "        b = os.read(3, 65536)\n"                                                                    \
        "        if not b:\n"                                                                                \
        "            break\n"                                                                                \
        "        chunks.append(b)\n"                                                                         \
        "    os.close(3)\n"                                                                                  \
        "    for kv in b''.join(chunks).split(b'\\0'):\n"                                                    \
        "        k, sep, v = kv.partition(b'=')\n"                                                           \
        "        if sep and k:\n"                                                                            \
        "            os.environb[k] = v\n"                                                                   \
        "_sandboxd_wait()\n"                                                                                 \
        "del _sandboxd_wait\n"

/* How a warm python ends (after PYTHON_BOOTSTRAP_MAIN): what the interpreter's own exit does for the
 * program, then os._exit() instead of tearing down every module. With numpy loaded that teardown
 * costs ~15 ms here, more than the rest of a warm run. In the order Py_FinalizeEx() keeps: the exit
 * status as SystemExit gives it (None: 0, an int: its low byte, anything else: printed, 1); non-daemon
 * threads joined (threading._shutdown); atexit handlers run (logging, tempfile, multiprocessing
 * register theirs there); the program's __main__ globals cleared and the garbage collected, so
 * __del__ methods run and files the program left open are released; every open file object
 * flushed, wherever it is referenced, so nothing written is lost; stdout and stderr flushed (a
 * failure: status 120 and Python's message). gc.freeze() in the wait keeps the preloaded modules out of that
 * collection. What a program can observe: objects referenced only from other modules' globals are
 * not finalized (their __del__ does not run), and gc.get_freeze_count() is not 0. */
#define PYTHON_WARM_EXIT                                                                                     \
        "import _io, gc\n"                                                                                   \
        "def _sandboxd_warm():\n"                                                                            \
        "    try:\n"                                                                                         \
        "        _sandboxd_main()\n"                                                                         \
        "        rc = 0\n"                                                                                   \
        "    except SystemExit as e:\n"                                                                      \
        "        c = e.code\n"                                                                               \
        "        if c is None:\n"                                                                            \
        "            rc = 0\n"                                                                               \
        "        elif isinstance(c, int):\n"                                                                 \
        "            rc = c & 0xff\n"                                                                        \
        "        else:\n"                                                                                    \
        "            rc = 1\n"                                                                               \
        "            try:\n"                                                                                 \
        "                sys.stderr.write(str(c) + '\\n')\n"                                                 \
        "            except BaseException:\n"                                                                \
        "                pass\n"                                                                             \
        "    t = sys.modules.get('threading')\n"                                                             \
        "    if t is not None:\n"                                                                            \
        "        try:\n"                                                                                     \
        "            t._shutdown()\n"                                                                        \
        "        except BaseException:\n"                                                                    \
        "            pass\n"                                                                                 \
        "    import atexit\n"                                                                                \
        "    atexit._run_exitfuncs()\n"                                                                      \
        "    try:\n"                                                                                         \
        "        sys.modules['__main__'].__dict__.clear()\n"                                                 \
        "    except BaseException:\n"                                                                        \
        "        pass\n"                                                                                     \
        "    gc.collect()\n"                                                                                 \
        "    for o in gc.get_objects():\n"                                                                   \
        "        if isinstance(o, _io._IOBase):\n"                                                           \
        "            try:\n"                                                                                 \
        "                if not o.closed:\n"                                                                 \
        "                    o.flush()\n"                                                                    \
        "            except BaseException:\n"                                                                \
        "                pass\n"                                                                             \
        "    for f in (sys.stdout, sys.stderr):\n"                                                           \
        "        try:\n"                                                                                     \
        "            if f is not None and not f.closed:\n"                                                   \
        "                f.flush()\n"                                                                        \
        "        except BaseException as e:\n"                                                               \
        "            rc = 120\n"                                                                             \
        "            if f is sys.stdout and sys.stderr is not None:\n"                                       \
        "                try:\n"                                                                             \
        "                    sys.stderr.write('Exception ignored in: %r\\n%s: %s\\n' % (f, type(e).__name__, e))\n" \
        "                    sys.stderr.flush()\n"                                                           \
        "                except BaseException:\n"                                                            \
        "                    pass\n"                                                                         \
        "    os._exit(rc)\n"                                                                                 \
        "_sandboxd_warm()\n"

/* The syntax check, in a process of its own started with -I -S (no site, no environment, no user
 * directories): only the interpreter and the file are involved. Exit 1: does not compile; 0: does;
 * 2: the check itself failed (too deep, out of memory), which decides nothing. */
#define PYTHON_CHECK                                                                                         \
        "import sys\n"                                                                                       \
        "try:\n"                                                                                             \
        "    with open(sys.argv[1], 'rb') as f:\n"                                                           \
        "        compile(f.read(), sys.argv[1], 'exec', dont_inherit=True)\n"                                \
        "except (SyntaxError, ValueError):\n"                                                                \
        "    sys.exit(1)\n"                                                                                  \
        "except BaseException:\n"                                                                            \
        "    sys.exit(2)\n"

/* Node: check the file as a CommonJS module body with vm.compileFunction and the module wrapper's
 * parameters (exports, require, module, __filename, __dirname), which is exactly what Node's own
 * CJS loader compiles, so top-level return is allowed and line/column match "node main.js".
 * (vm.Script over Module.wrap() would do too, but reports errors at the end of input against the
 * wrapper's closing "});".) The error is printed as Node prints it, without the bootstrap's stack
 * frames. Errors that only mean "this is an ES module" (import/export, top-level await, ...) are
 * left to Node's loader, which detects module syntax itself; a real syntax error in such a file
 * then surfaces at run time. The program is started with Module.runMain(), as the node binary
 * does, so require.main === module holds. NODE_CHECK is the same test in a process of its own,
 * which decides phase=compile after a failed run (exit 1: a syntax error; 0: none; 2: unknown). */
#define NODE_ESM_ONLY_ERRORS                                                                                 \
        "  const esm = [\n"                                                                                  \
        "    'Cannot use import statement outside a module',\n"                                              \
        "    \"Unexpected token 'export'\",\n"                                                               \
        "    \"Cannot use 'import.meta' outside a module\",\n"                                               \
        "    \"Identifier 'module' has already been declared\",\n"                                           \
        "    \"Identifier 'exports' has already been declared\",\n"                                          \
        "    \"Identifier 'require' has already been declared\",\n"                                          \
        "    \"Identifier '__filename' has already been declared\",\n"                                       \
        "    \"Identifier '__dirname' has already been declared\",\n"                                        \
        "    'await is only valid in async functions and the top level bodies of modules',\n"                \
        "  ];\n"

#define NODE_BOOTSTRAP                                                                                       \
        "'use strict';\n"                                                                                    \
        "(() => {\n"                                                                                         \
        "  const fs = require('fs'), path = require('path'), vm = require('vm');\n"                          \
        "  const Module = require('module');\n"                                                              \
        "  const file = path.resolve(process.argv[1]);\n"                                                    \
        "  const src = fs.readFileSync(file, 'utf8');\n"                                                     \
        NODE_ESM_ONLY_ERRORS                                                                                 \
        "  try {\n"                                                                                          \
        "    vm.compileFunction(src, ['exports', 'require', 'module', '__filename', '__dirname'],\n"         \
        "                       { filename: file });\n"                                                      \
        "  } catch (e) {\n"                                                                                  \
        "    if (!(e instanceof SyntaxError)) throw e;\n"                                                    \
        "    if (!esm.includes(e.message)) {\n"                                                              \
        "      const text = String(e.stack).split('\\n').filter(l => !/^    at /.test(l));\n"                \
        "      fs.writeSync(2, text.join('\\n') + '\\n');\n"                                                 \
        "      process.exit(1);\n"                                                                           \
        "    }\n"                                                                                            \
        "  }\n"                                                                                              \
        "  process.argv[1] = file;\n"                                                                        \
        "  Module.runMain();\n"                                                                              \
        "})();\n"

#define NODE_CHECK                                                                                           \
        "'use strict';\n"                                                                                    \
        "(() => {\n"                                                                                         \
        "  const fs = require('fs'), vm = require('vm');\n"                                                  \
        NODE_ESM_ONLY_ERRORS                                                                                 \
        "  let src;\n"                                                                                       \
        "  try { src = fs.readFileSync(process.argv[1], 'utf8'); } catch { process.exit(2); }\n"             \
        "  try {\n"                                                                                          \
        "    vm.compileFunction(src, ['exports', 'require', 'module', '__filename', '__dirname'],\n"         \
        "                       { filename: process.argv[1] });\n"                                           \
        "  } catch (e) {\n"                                                                                  \
        "    process.exit(e instanceof SyntaxError && !esm.includes(e.message) ? 1 : 2);\n"                  \
        "  }\n"                                                                                              \
        "  process.exit(0);\n"                                                                               \
        "})();\n"

static const Language languages[] = {
        {
                .name = "python",
                .aliases = STRV("python3", "py"),
                .source_name = "main.py",
                .runtime = "/usr/bin/python3",
                .run_argv = STRV("/usr/bin/python3", "-s", "-c", PYTHON_BOOTSTRAP, SANDBOX_CODE_DIR "/main.py"),
                .check_argv = STRV("/usr/bin/python3", "-I", "-S", "-c", PYTHON_CHECK, SANDBOX_CODE_DIR "/main.py"),
                /* No __pycache__ written into the workspace (it is the program's output area). */
                .env = STRV("PYTHONDONTWRITEBYTECODE=1"),
                .warm_argv = STRV("/usr/bin/python3", "-s", "-c", PYTHON_WARM_WAIT PYTHON_BOOTSTRAP_MAIN PYTHON_WARM_EXIT,
                                  SANDBOX_CODE_DIR "/main.py"),
                /* The interpreter's own, the C library's (locale, time zone, malloc, loader) and those
                 * the preloaded numerical libraries read at import. */
                .warm_cold_env = STRV("PYTHON*", "LC_*", "LANG", "LANGUAGE", "TZ", "LD_*", "MALLOC_*",
                                      "GLIBC_*", "OPENBLAS_*", "OMP_*", "MKL_*", "GOTO*", "NUMEXPR_*",
                                      "NPY_*", "NUMPY_*", "HOME", "PATH", "TMPDIR"),
        },
        {
                .name = "node",
                .aliases = STRV("javascript", "js", "nodejs"),
                .source_name = "main.js",
                .runtime = "/usr/bin/node",
                .run_argv = STRV("/usr/bin/node", "-e", NODE_BOOTSTRAP, SANDBOX_CODE_DIR "/main.js"),
                .check_argv = STRV("/usr/bin/node", "-e", NODE_CHECK, SANDBOX_CODE_DIR "/main.js"),
                /* The program's file is not in the workspace, so require() would not look in the
                 * workspace's node_modules (where npm install puts packages, in a run with network):
                 * a later turn of a session finds them there. */
                .env = STRV("NODE_PATH=/workspace/node_modules"),
                /* V8 write-protects its JIT code space with memory protection keys where the CPU
                 * has them (pkey_alloc at start, pkey_mprotect per code page); without them it
                 * falls back to mprotect. */
                .extra_syscalls = STRV("pkey_alloc", "pkey_free", "pkey_mprotect"),
        },
        {
                .name = "bash",
                .aliases = STRV("sh"),
                .source_name = "main.sh",
                .runtime = "/bin/bash",
                /* bash -n parses the whole file without running it: a syntax error anywhere is a
                 * compile error, not a failure half-way through the script. */
                .compile_argv = STRV("/bin/bash", "-n", SANDBOX_CODE_DIR "/main.sh"),
                .run_argv = STRV("/bin/bash", SANDBOX_CODE_DIR "/main.sh"),
        },
        /* Compiled languages are rows with a compile step whose output lands in the workspace.
         * Rows are only added for compilers the hosts actually ship, e.g.:
         *
         * {
         *         .name = "c",
         *         .source_name = "main.c",
         *         .runtime = "/usr/bin/gcc",
         *         .compile_argv = STRV("/usr/bin/gcc", "-O2", "-o", "/workspace/main", SANDBOX_CODE_DIR "/main.c", "-lm"),
         *         .run_argv = STRV("/workspace/main"),
         * },
         * {
         *         .name = "go",
         *         .aliases = STRV("golang"),
         *         .source_name = "main.go",
         *         .runtime = "/usr/lib/go/bin/go",
         *         .compile_argv = STRV("/usr/lib/go/bin/go", "build", "-o", "/workspace/main", SANDBOX_CODE_DIR "/main.go"),
         *         .run_argv = STRV("/workspace/main"),
         *         // the Go tool wants a writable cache and home; /tmp is the bounded tmpfs
         *         .env = STRV("GOCACHE=/tmp/go-cache", "HOME=/tmp", "GO111MODULE=off"),
         * },
         * {
         *         .name = "rust",
         *         .aliases = STRV("rs"),
         *         .source_name = "main.rs",
         *         .runtime = "/usr/bin/rustc",
         *         .compile_argv = STRV("/usr/bin/rustc", "-O", "-o", "/workspace/main", SANDBOX_CODE_DIR "/main.rs"),
         *         .run_argv = STRV("/workspace/main"),
         * },
         */
};

const Language *language_find(const char *name) {
        if (isempty(name))
                return NULL;

        for (size_t i = 0; i < ELEMENTSOF(languages); i++) {
                const Language *l = languages + i;

                if (streq(l->name, name))
                        return l;
                for (const char *const *a = l->aliases; a && *a; a++)
                        if (streq(*a, name))
                                return l;
        }
        return NULL;
}

const Language *language_get(size_t i) {
        return i < ELEMENTSOF(languages) ? languages + i : NULL;
}

size_t language_count(void) {
        return ELEMENTSOF(languages);
}

bool language_available(const Language *l) {
        if (!l || !l->runtime)
                return false;
        if (access(l->runtime, X_OK) < 0)
                return false;
        /* The argvs' programs may differ from the runtime (a compiler driver, say). */
        if (l->compile_argv && access(l->compile_argv[0], X_OK) < 0)
                return false;
        return access(l->run_argv[0], X_OK) >= 0;
}
