/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The LanguageRunner table. A row says where the code goes, what runs it and how a syntax error is
 * told apart from a runtime failure. sandbox-exec runs these argvs inside the unit with the
 * workspace as the working directory, so relative file names below are workspace files. */

#include <unistd.h>

#include "language.h"
#include "util.h"

#define STRV(...) ((const char *const[]) { __VA_ARGS__, NULL })

/* Python: compile first so a SyntaxError is reported as such (phase=compile) and not as a crash of
 * the program; then run the code object as __main__, as "python3 main.py" would: fresh module
 * dict registered in sys.modules (pickle, multiprocessing and "if __name__ == '__main__'" work),
 * sys.argv=['main.py'], sys.path[0] the workspace. The source file name comes from argv[1] so the
 * bootstrap is the same for any row. Tracebacks skip the bootstrap's own frame. fd 3 is the syntax
 * pipe (see Language.syntax_fd); it is closed before user code runs so the program cannot fake a
 * compile error. (excepthook prints e.__traceback__, not its tb argument, hence with_traceback().) */
#define PYTHON_BOOTSTRAP                                                                                     \
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
        "        try:\n"                                                                                     \
        "            os.write(3, b'C')\n"                                                                    \
        "        except OSError:\n"                                                                          \
        "            pass\n"                                                                                 \
        "        sys.stderr.write(''.join(traceback.format_exception_only(type(e), e)))\n"                   \
        "        sys.stderr.flush()\n"                                                                       \
        "        sys.exit(1)\n"                                                                              \
        "    try:\n"                                                                                         \
        "        os.close(3)\n"                                                                              \
        "    except OSError:\n"                                                                              \
        "        pass\n"                                                                                     \
        "    import types\n"                                                                                 \
        "    m = types.ModuleType('__main__')\n"                                                             \
        "    m.__file__ = os.path.join(cwd, name)\n"                                                         \
        "    m.__cached__ = None\n"                                                                          \
        "    sys.modules['__main__'] = m\n"                                                                  \
        "    sys.argv[:] = [name]\n"                                                                         \
        "    if sys.path and sys.path[0] == '':\n"                                                           \
        "        sys.path[0] = cwd\n"                                                                        \
        "    else:\n"                                                                                        \
        "        sys.path.insert(0, cwd)\n"                                                                  \
        "    try:\n"                                                                                         \
        "        exec(code, m.__dict__)\n"                                                                   \
        "    except SystemExit:\n"                                                                           \
        "        raise\n"                                                                                    \
        "    except BaseException as e:\n"                                                                   \
        "        tb = e.__traceback__.tb_next\n"                                                             \
        "        sys.excepthook(type(e), e.with_traceback(tb), tb)\n"                                        \
        "        sys.exit(1)\n"                                                                              \
        "_sandboxd_main()\n"

/* Node: check the file as a CommonJS module body with vm.compileFunction and the module wrapper's
 * parameters (exports, require, module, __filename, __dirname), which is exactly what Node's own
 * CJS loader compiles, so top-level return is allowed and line/column match "node main.js".
 * (vm.Script over Module.wrap() would do too, but reports errors at the end of input against the
 * wrapper's closing "});".) The error is printed as Node prints it, without the bootstrap's stack
 * frames. Errors that only mean "this is an ES module" (import/export, top-level await, ...) are
 * left to Node's loader, which detects module syntax itself; a real syntax error in such a file
 * then surfaces at run time. The program is started with Module.runMain(), as the node binary
 * does, so require.main === module holds. */
#define NODE_BOOTSTRAP                                                                                       \
        "'use strict';\n"                                                                                    \
        "(() => {\n"                                                                                         \
        "  const fs = require('fs'), path = require('path'), vm = require('vm');\n"                          \
        "  const Module = require('module');\n"                                                              \
        "  const file = path.resolve(process.argv[1]);\n"                                                    \
        "  const src = fs.readFileSync(file, 'utf8');\n"                                                     \
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
        "  ];\n"                                                                                             \
        "  try {\n"                                                                                          \
        "    vm.compileFunction(src, ['exports', 'require', 'module', '__filename', '__dirname'],\n"         \
        "                       { filename: file });\n"                                                      \
        "  } catch (e) {\n"                                                                                  \
        "    if (!(e instanceof SyntaxError)) throw e;\n"                                                    \
        "    if (!esm.includes(e.message)) {\n"                                                              \
        "      try { fs.writeSync(3, 'C'); } catch {}\n"                                                     \
        "      const text = String(e.stack).split('\\n').filter(l => !/^    at /.test(l));\n"                \
        "      fs.writeSync(2, text.join('\\n') + '\\n');\n"                                                 \
        "      process.exit(1);\n"                                                                           \
        "    }\n"                                                                                            \
        "  }\n"                                                                                              \
        "  try { fs.closeSync(3); } catch {}\n"                                                              \
        "  process.argv[1] = file;\n"                                                                        \
        "  Module.runMain();\n"                                                                              \
        "})();\n"

static const Language languages[] = {
        {
                .name = "python",
                .aliases = STRV("python3", "py"),
                .source_name = "main.py",
                .runtime = "/usr/bin/python3",
                .run_argv = STRV("/usr/bin/python3", "-c", PYTHON_BOOTSTRAP, "main.py"),
                .syntax_fd = true,
                /* No __pycache__ written into the workspace (it is the program's output area). */
                .env = STRV("PYTHONDONTWRITEBYTECODE=1"),
        },
        {
                .name = "node",
                .aliases = STRV("javascript", "js", "nodejs"),
                .source_name = "main.js",
                .runtime = "/usr/bin/node",
                .run_argv = STRV("/usr/bin/node", "-e", NODE_BOOTSTRAP, "main.js"),
                .syntax_fd = true,
        },
        {
                .name = "bash",
                .aliases = STRV("sh"),
                .source_name = "main.sh",
                .runtime = "/bin/bash",
                /* bash -n parses the whole file without running it: a syntax error anywhere is a
                 * compile error, not a failure half-way through the script. */
                .compile_argv = STRV("/bin/bash", "-n", "main.sh"),
                .run_argv = STRV("/bin/bash", "main.sh"),
        },
        /* Compiled languages are rows with a compile step whose output lands in the workspace.
         * Rows are only added for compilers the hosts actually ship, e.g.:
         *
         * {
         *         .name = "c",
         *         .source_name = "main.c",
         *         .runtime = "/usr/bin/gcc",
         *         .compile_argv = STRV("/usr/bin/gcc", "-O2", "-o", "/workspace/main", "main.c", "-lm"),
         *         .run_argv = STRV("/workspace/main"),
         * },
         * {
         *         .name = "go",
         *         .aliases = STRV("golang"),
         *         .source_name = "main.go",
         *         .runtime = "/usr/lib/go/bin/go",
         *         .compile_argv = STRV("/usr/lib/go/bin/go", "build", "-o", "/workspace/main", "main.go"),
         *         .run_argv = STRV("/workspace/main"),
         *         // the Go tool wants a writable cache and home; /tmp is the bounded tmpfs
         *         .env = STRV("GOCACHE=/tmp/go-cache", "HOME=/tmp", "GO111MODULE=off"),
         * },
         * {
         *         .name = "rust",
         *         .aliases = STRV("rs"),
         *         .source_name = "main.rs",
         *         .runtime = "/usr/bin/rustc",
         *         .compile_argv = STRV("/usr/bin/rustc", "-O", "-o", "/workspace/main", "main.rs"),
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
