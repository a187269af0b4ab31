// SPDX-License-Identifier: LGPL-2.1-or-later
// The official MCP TypeScript SDK's client, unmodified, against sandboxd (driven by
// tests/integration/test-mcp.py): connect over stdio (`sandboxctl mcp`) or Streamable HTTP
// (POST /mcp), list the tools, call them, and print what came back as one JSON object on stdout.
//   node client.mjs stdio SANDBOXCTL SOCKET
//   node client.mjs http URL KEY
// The SDK is where tools/install-deps put it (SANDBOXD_MCP_CLIENT_DIR): ES modules do not search
// NODE_PATH, so its files are imported by path.
const sdk = `${process.env.SANDBOXD_MCP_CLIENT_DIR || "/var/lib/sandboxd-dev/mcp-client"}` +
    "/node_modules/@modelcontextprotocol/sdk/dist/esm/client";
const { Client } = await import(`${sdk}/index.js`);
const { StdioClientTransport } = await import(`${sdk}/stdio.js`);
const { StreamableHTTPClientTransport } = await import(`${sdk}/streamableHttp.js`);

const [mode, a, b] = process.argv.slice(2);
const transport = mode === "stdio"
    ? new StdioClientTransport({ command: a, args: ["--socket", b, "mcp"], stderr: "inherit" })
    : new StreamableHTTPClientTransport(new URL(a), { requestInit: { headers: { Authorization: `Bearer ${b}` } } });
const client = new Client({ name: "sandboxd-test", version: "1.0.0" });
const opts = { timeout: 300000 };   // a run may take a while on a slow machine
const out = {};

// A 1x1 PNG written by the program itself (no library needed): the image a plot would be.
const png = [
    "import base64, os",
    "os.makedirs('/workspace/output', exist_ok=True)",
    "open('/workspace/output/plot.png', 'wb').write(base64.b64decode(",
    "    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='))",
    "open('/workspace/output/data.csv', 'w').write('x,y\\n1,2\\n')",
    "print('plotted')",
].join("\n");

// A matplotlib figure saved as PNG: what an agent asks for when it wants to see its data.
const mpl = [
    "import matplotlib.pyplot as plt",
    "plt.plot([1, 2, 3, 4], [1, 4, 9, 16], marker='o')",
    "plt.title('squares')",
    "plt.savefig('/workspace/output/squares.png')",
    "print('saved')",
].join("\n");

try {
    await client.connect(transport);
    out.server = client.getServerVersion();
    out.tools = (await client.listTools(undefined, opts)).tools;
    out.answer = await client.callTool({ name: "run_code", arguments: { language: "python", code: "print(6*7)" } },
                                       undefined, opts);
    out.stdin = await client.callTool({ name: "run_code", arguments: { language: "python",
                                        code: "print(input()[::-1])", stdin: "olleh\n" } }, undefined, opts);
    out.plot = await client.callTool({ name: "run_code", arguments: { language: "python", code: png } }, undefined, opts);
    // A real plot, where the environment with matplotlib is installed (test-mcp.py says which).
    if (process.env.SANDBOXD_MCP_PLOT_ENV)
        out.mpl = await client.callTool({ name: "run_code", arguments: { language: "python",
                                          environment: process.env.SANDBOXD_MCP_PLOT_ENV, code: mpl } },
                                        undefined, opts);
    out.failed = await client.callTool({ name: "run_code",
                                         arguments: { language: "python", code: "import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)" } },
                                       undefined, opts);
    out.refused = await client.callTool({ name: "run_code", arguments: { language: "cobol-9000", code: "x" } }, undefined, opts);
    const id = out.answer.structuredContent && out.answer.structuredContent.execution_id;
    out.get = await client.callTool({ name: "get_execution", arguments: { execution_id: id } }, undefined, opts);
    out.get_missing = await client.callTool({ name: "get_execution", arguments: { execution_id: "no-such-execution" } },
                                            undefined, opts);
    out.languages = await client.callTool({ name: "list_languages", arguments: {} }, undefined, opts);
    // A session's files between turns: a run writes, list_files and read_file see it, write_file
    // puts a file the next run reads; a link the program planted is never followed.
    const session = `mcp_${process.pid}_${mode}`;
    const call = (name, args) => client.callTool({ name, arguments: args }, undefined, opts);
    out.s_run1 = await call("run_code", { language: "python", session_id: session, code:
        "import os\nopen('notes.txt', 'w').write('turn one\\n')\nos.symlink('/etc/passwd', 'leak')\nprint('ok')" });
    out.s_list = await call("list_files", { session_id: session });
    out.s_read = await call("read_file", { session_id: session, path: "notes.txt" });
    out.s_leak = await call("read_file", { session_id: session, path: "leak" });
    out.s_write = await call("write_file", { session_id: session, path: "in.txt", content: "from the agent" });
    out.s_write_b64 = await call("write_file", { session_id: session, path: "bin.dat", content_base64: "AAEC/w==" });
    out.s_run2 = await call("run_code", { language: "python", session_id: session, code:
        "print(open('in.txt').read(), list(open('bin.dat', 'rb').read()))" });
    out.s_read_bin = await call("read_file", { session_id: session, path: "bin.dat" });
    out.s_traversal = await call("read_file", { session_id: session, path: "../../etc/passwd" });
    out.s_nosession = await call("list_files", { session_id: "no_such_session_here" });
    await client.ping(opts);
    out.ping = true;
    try {
        await client.callTool({ name: "no_such_tool", arguments: {} }, undefined, opts);
        out.unknown_tool = "answered";
    } catch (e) {
        out.unknown_tool = { code: e.code, message: e.message };
    }
} catch (e) {
    out.error = String(e && e.stack || e);
}
await client.close().catch(() => {});
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(out.error ? 1 : 0);
