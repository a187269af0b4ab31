// SPDX-License-Identifier: LGPL-2.1-or-later
// The npm package piston-client (1.0.2), unmodified, against sandboxd's Piston API v2 (driven by
// tests/integration/test-piston.py): runtimes(), then execute() of python, of C that does not
// compile, of python that echoes its stdin, and of javascript; what came back is printed as one
// JSON object on stdout.
//   node client.mjs http://127.0.0.1:PORT
// The client is where tools/install-deps put it (SANDBOXD_PISTON_CLIENT_DIR): ES modules do not
// search NODE_PATH, so it is imported by path.
const dir = process.env.SANDBOXD_PISTON_CLIENT_DIR || "/var/lib/sandboxd-dev/piston-client";
const { default: piston } = await import(`${dir}/node_modules/piston-client/index.js`);

const client = piston({ server: process.argv[2] });
const out = {};
out.runtimes = await client.runtimes();
out.python = await client.execute("python", "print(6*7)");
out.c_error = await client.execute("c", "int main(void) { return undefined_name; }");
out.stdin = await client.execute("python", "import sys\nprint(sys.stdin.read().upper(), end='')",
    { stdin: "echo me back\n" });
out.args = await client.execute("javascript", "console.log(process.argv.slice(2).join(','))");
out.c_ok = await client.execute("c", "#include <stdio.h>\nint main(int argc, char **argv) { printf(\"%d\\n\", argc); return 3; }");
out.timeout = await client.execute("python", "while True: pass", { runTimeout: 500 });
// Errors are answered, not thrown: piston-client returns the body (or {success: false, error}).
out.unknown = await client.execute({ language: "brainfuck", version: "2.7.3", files: [{ content: "+" }] });
console.log(JSON.stringify(out));
