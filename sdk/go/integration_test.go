// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox_test

// Integration tests against the real daemon: run by sdk/go/run-go-tests (integration) inside
// tests/harness/sandbox-harness (meson test sdk-go-integration), which sets SANDBOXD_SOCKET and
// SANDBOXD_GO_INTEGRATION=1. Without them they are skipped. They need root (they add a language
// file to the daemon's configuration and reload it).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sandbox "github.com/sandboxd/sandboxd/sdk/go"
)

func integrationClient(t *testing.T) *sandbox.Client {
	t.Helper()
	if os.Getenv("SANDBOXD_GO_INTEGRATION") != "1" {
		t.Skip("not in the harness: SANDBOXD_GO_INTEGRATION=1 is not set (sdk/go/run-go-tests integration sets it)")
	}
	sock := os.Getenv("SANDBOXD_SOCKET")
	if sock == "" {
		sock = "/run/sandboxd/api.sock"
	}
	return sandbox.NewClient(sandbox.Config{Endpoint: "unix://" + sock, Timeout: 120 * time.Second})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()) }

// outcome runs req and says how errors.As + switch on the type classified it.
func outcome(t *testing.T, c *sandbox.Client, req sandbox.ExecuteRequest) (string, *sandbox.Result) {
	t.Helper()
	res, err := c.Execute(ctxT(t), req)
	if err == nil {
		return "success", res
	}
	wrapped := fmt.Errorf("caller's layer: %w", err)
	var sbErr *sandbox.Error
	if errors.As(wrapped, &sbErr) {
		if sbErr.Result != res || res == nil {
			t.Fatalf("Execute's Result and the *Error's differ: %p %p", res, sbErr.Result)
		}
		switch sbErr.Type {
		case sandbox.ErrTimeout:
			return "timeout", res
		case sandbox.ErrOOM:
			return "oom", res
		case sandbox.ErrInternal:
			return "internal", res
		case sandbox.ErrCompile:
			return "compile", res
		case sandbox.ErrRuntime:
			return "runtime", res
		case sandbox.ErrCancelled:
			return "cancelled", res
		default:
			return "other:" + string(sbErr.Type), res
		}
	}
	t.Fatalf("not a *sandbox.Error: %T %v", err, err)
	return "", nil
}

func TestIntegrationSuccess(t *testing.T) {
	c := integrationClient(t)
	kind, res := outcome(t, c, sandbox.ExecuteRequest{Language: "python", Code: "import sys\nprint('hello', sys.argv[1:])",
		Args: []string{"a b"}})
	if kind != "success" || res.Stdout != "hello ['a b']\n" || res.ExitCode == nil || *res.ExitCode != 0 ||
		res.Status != sandbox.StatusSuccess || !strings.HasPrefix(res.ExecutionID, "go_") {
		t.Fatalf("%s %+v", kind, res)
	}
}

func TestIntegrationTimeout(t *testing.T) {
	c := integrationClient(t)
	kind, res := outcome(t, c, sandbox.ExecuteRequest{Language: "python", Code: "while True: pass",
		Limits: &sandbox.Limits{TimeoutMS: 500}})
	if kind != "timeout" || res.Limits.TimeoutMS != 500 || res.ErrorType != sandbox.ErrTimeout {
		t.Fatalf("%s: %+v", kind, res)
	}
}

func TestIntegrationOOM(t *testing.T) {
	c := integrationClient(t)
	kind, res := outcome(t, c, sandbox.ExecuteRequest{Language: "python",
		Code:   "x = []\nwhile True: x.append(bytearray(16 << 20))\n",
		Limits: &sandbox.Limits{MemoryMB: 64}})
	if kind != "oom" {
		t.Fatalf("%s: %s %s", kind, res.Reason, res.Summary)
	}
}

func TestIntegrationCompileError(t *testing.T) {
	c := integrationClient(t)
	kind, res := outcome(t, c, sandbox.ExecuteRequest{Language: "python", Code: "print('unclosed'"})
	if kind != "compile" {
		t.Fatalf("%s: %s", kind, res.Summary)
	}
	kind, res = outcome(t, c, sandbox.ExecuteRequest{Language: "python", Code: "raise SystemExit(3)"})
	if kind != "runtime" || res.ExitCode == nil || *res.ExitCode != 3 {
		t.Fatalf("%s: %+v", kind, res)
	}
}

// An internal error for real: a language whose Run= program does not exist inside the sandbox
// (a path below /tmp is not checked on the host, it is the sandbox's own), so sandbox-exec's exec
// of it fails before the program runs: a setup failure, sandboxd's internal_error.
func TestIntegrationInternalError(t *testing.T) {
	c := integrationClient(t)
	conf := os.Getenv("SANDBOXD_CONFIG_DIR")
	if conf == "" {
		t.Skip("SANDBOXD_CONFIG_DIR is not set: not in the harness")
	}
	dir := filepath.Join(conf, "languages")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "gosdkbroken.conf")
	text := "# added by the Go SDK's integration test\n[Language]\nName=gosdkbroken\nSourceFile=main.txt\n" +
		"Runtime=/bin/true\nRun=/tmp/sandboxd-go-sdk-no-such-program %s\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	reload := func() {
		if out, err := exec.Command("systemctl", "reload", "sandboxd.service").CombinedOutput(); err != nil {
			t.Fatalf("systemctl reload: %v %s", err, out)
		}
	}
	t.Cleanup(func() { os.Remove(file); reload() })
	reload()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ls, err := c.Languages(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range ls {
			found = found || (l.Name == "gosdkbroken" && l.Available)
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the language did not appear after the reload: %+v", ls)
		}
		time.Sleep(100 * time.Millisecond)
	}
	kind, res := outcome(t, c, sandbox.ExecuteRequest{Language: "gosdkbroken", Code: "x"})
	if kind != "internal" || res.ErrorType != sandbox.ErrInternal || res.ExitCode != nil {
		t.Fatalf("%s: %+v", kind, res)
	}
	// The stored record says so too.
	got, err := c.GetExecution(ctxT(t), res.ExecutionID)
	if err != nil || got.ErrorType != sandbox.ErrInternal || got.Status != sandbox.StatusFailed {
		t.Fatalf("record: %v %+v", err, got)
	}
	t.Logf("internal_error: reason %q", res.Reason)
}

func TestIntegrationAPIError(t *testing.T) {
	c := integrationClient(t)
	_, err := c.Execute(ctxT(t), sandbox.ExecuteRequest{Language: "python", Code: "1",
		Limits: &sandbox.Limits{MemoryMB: 9999999}})
	var ae *sandbox.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 400 || ae.Code != "invalid_request" || ae.Field != "limits.memory_mb" {
		t.Fatalf("%T %v", err, err)
	}
	_, err = c.GetExecution(ctxT(t), "no-such-execution")
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != "not_found" {
		t.Fatalf("%v", err)
	}
	// The harness runs the daemon with the strong tier off (Strong=never): asking for it is
	// refused, never run in the standard tier instead; a plain run's record says its tier.
	_, err = c.Execute(ctxT(t), sandbox.ExecuteRequest{Language: "python", Code: "print(1)", Isolation: "strong"})
	if !errors.As(err, &ae) || ae.StatusCode != 422 || ae.Code != "unsupported" || ae.Field != "isolation" {
		t.Fatalf("isolation strong with Strong=never: %T %v", err, err)
	}
	res, err := c.Execute(ctxT(t), sandbox.ExecuteRequest{Language: "python", Code: "print(1)"})
	if err != nil || res.Isolation == nil || res.Isolation.Tier != "standard" || len(res.Isolation.Reasons) != 0 {
		t.Fatalf("isolation of a plain run: %v %+v", err, res)
	}
}

func TestIntegrationSubmitWaitIdempotent(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	req := sandbox.ExecuteRequest{Language: "python", Code: "print('once')", ExecutionID: uniq("go-idem")}
	id1, err := c.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := c.Submit(ctx, req)
	if err != nil || id1 != req.ExecutionID || id2 != id1 {
		t.Fatalf("ids %q %q: %v", id1, id2, err)
	}
	res, err := c.Wait(ctx, id1)
	if err != nil || res.Stdout != "once\n" {
		t.Fatalf("Wait: %v %+v", err, res)
	}
	// After the end too, the same id names the same execution.
	res2, err := c.Execute(ctx, req)
	if err != nil || res2.RecordID != res.RecordID || !res2.CreatedAt.Equal(res.CreatedAt) {
		t.Fatalf("Execute with the id again: %v %+v", err, res2)
	}
	// A different request under the same id is refused.
	req.Code = "print('twice')"
	if _, err := c.Submit(ctx, req); err == nil {
		t.Fatal("another request with the same id was accepted")
	} else if ae := (*sandbox.APIError)(nil); !errors.As(err, &ae) || ae.StatusCode != 409 {
		t.Fatalf("want 409: %v", err)
	}
	n := 0
	c.EachExecution(ctx, sandbox.ListFilter{Limit: 1000}, func(r *sandbox.Result) error {
		if r.ExecutionID == id1 {
			n++
		}
		return nil
	})
	if n != 1 {
		t.Fatalf("%d executions with id %s", n, id1)
	}
}

func TestIntegrationListExecutions(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	sess := uniq("go-list")
	want := map[string]bool{}
	for i := 0; i < 3; i++ {
		res, err := c.Execute(ctx, sandbox.ExecuteRequest{Language: "python", Code: fmt.Sprintf("print(%d)", i), SessionID: sess})
		if err != nil {
			t.Fatal(err)
		}
		want[res.ExecutionID] = true
	}
	page, err := c.ListExecutions(ctx, sandbox.ListFilter{SessionID: sess, Limit: 2})
	if err != nil || len(page.Executions) != 2 || page.NextCursor == "" {
		t.Fatalf("first page: %v %+v", err, page)
	}
	got := map[string]bool{}
	err = c.EachExecution(ctx, sandbox.ListFilter{SessionID: sess, Limit: 2}, func(r *sandbox.Result) error {
		if got[r.ExecutionID] || r.SessionID != sess || r.Status != sandbox.StatusSuccess {
			return fmt.Errorf("unexpected %+v", r)
		}
		got[r.ExecutionID] = true
		return nil
	})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%v: got %v want %v", err, got, want)
	}
	c.DeleteSession(ctx, sess)
}

func TestIntegrationCancel(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	id, err := c.Submit(ctx, sandbox.ExecuteRequest{Language: "python", Code: "import time\nprint('start', flush=True)\ntime.sleep(60)"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		r, err := c.GetExecution(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == sandbox.StatusRunning {
			break
		}
		if r.Status.Final() {
			t.Fatalf("ended before the cancel: %+v", r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Abandoning a wait does not stop the run.
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.Wait(wctx, id)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("abandoned wait: %v", err)
	}
	if r, _ := c.GetExecution(ctx, id); r == nil || r.Status != sandbox.StatusRunning {
		t.Fatalf("the run stopped when a wait was abandoned: %+v", r)
	}
	t0 := time.Now()
	if _, err := c.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, id)
	var sbErr *sandbox.Error
	if !errors.As(err, &sbErr) || sbErr.Type != sandbox.ErrCancelled || res.Status != sandbox.StatusCancelled {
		t.Fatalf("after Cancel: %v %+v", err, res)
	}
	if d := time.Since(t0); d > 20*time.Second {
		t.Fatalf("the cancel took %v", d)
	}
	if _, err := c.Cancel(ctx, id); err == nil {
		t.Fatal("cancel of a final execution accepted")
	} else if ae := (*sandbox.APIError)(nil); !errors.As(err, &ae) || ae.StatusCode != 409 {
		t.Fatalf("want 409: %v", err)
	}
}

func TestIntegrationArtifact(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	content := strings.Repeat("artifact line\n", 5000)
	res, err := c.Execute(ctx, sandbox.ExecuteRequest{Language: "python",
		Code: "import os\nos.makedirs('/workspace/output/sub', exist_ok=True)\n" +
			"open('/workspace/output/x.txt','w').write('artifact line\\n' * 5000)\n" +
			"open('/workspace/output/sub/y z.txt','w').write('y')\n"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Artifacts) != 2 {
		t.Fatalf("artifacts: %+v", res.Artifacts)
	}
	var b bytes.Buffer
	n, err := c.DownloadArtifact(ctx, res.ExecutionID, "x.txt", &b)
	if err != nil || n != int64(len(content)) || b.String() != content {
		t.Fatalf("x.txt: %v %d", err, n)
	}
	b.Reset()
	if _, err := c.DownloadArtifact(ctx, res.ExecutionID, "sub/y z.txt", &b); err != nil || b.String() != "y" {
		t.Fatalf("sub/y z.txt: %v %q", err, b.String())
	}
}

func TestIntegrationSessions(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	sess := uniq("go-sess")
	if _, err := c.Execute(ctx, sandbox.ExecuteRequest{Language: "python", SessionID: sess,
		Code: "open('/workspace/note.txt','w').write('from run 1')"}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Execute(ctx, sandbox.ExecuteRequest{Language: "python", SessionID: sess,
		Code: "print(open('/workspace/note.txt').read())"})
	if err != nil || res.Stdout != "from run 1\n" {
		t.Fatalf("run 2: %v %+v", err, res)
	}
	s, err := c.GetSession(ctx, sess)
	if err != nil || s.SessionID != sess || s.Executions != 2 {
		t.Fatalf("GetSession: %v %+v", err, s)
	}
	// Files between runs.
	if n, err := c.PutSessionFile(ctx, sess, "put.txt", strings.NewReader("uploaded"), 8); err != nil || n != 8 {
		t.Fatalf("PutSessionFile: %v %d", err, n)
	}
	res, err = c.Execute(ctx, sandbox.ExecuteRequest{Language: "python", SessionID: sess,
		Code: "print(open('/workspace/put.txt').read())"})
	if err != nil || res.Stdout != "uploaded\n" {
		t.Fatalf("run 3: %v %+v", err, res)
	}
	var b bytes.Buffer
	if _, err := c.GetSessionFile(ctx, sess, "note.txt", &b); err != nil || b.String() != "from run 1" {
		t.Fatalf("GetSessionFile: %v %q", err, b.String())
	}
	l, err := c.ListSessionFiles(ctx, sess, "")
	names := []string{}
	if l != nil {
		for _, e := range l.Entries {
			names = append(names, e.Name)
		}
	}
	joined := "," + strings.Join(names, ",") + ","
	if err != nil || !strings.Contains(joined, ",note.txt,") || !strings.Contains(joined, ",put.txt,") {
		t.Fatalf("ListSessionFiles: %v %v", err, names)
	}
	if err := c.DeleteSessionFile(ctx, sess, "put.txt"); err != nil {
		t.Fatal(err)
	}
	var ae *sandbox.APIError
	if _, err := c.GetSessionFile(ctx, sess, "put.txt", io.Discard); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("a deleted file: %v", err)
	}
	ss, err := c.ListSessions(ctx)
	found := false
	for _, x := range ss {
		found = found || x.SessionID == sess
	}
	if err != nil || !found {
		t.Fatalf("ListSessions: %v %+v", err, ss)
	}
	if err := c.DeleteSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetSession(ctx, sess); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("after DeleteSession: %v", err)
	}
}

func TestIntegrationEvents(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	id, err := c.Submit(ctx, sandbox.ExecuteRequest{Language: "python",
		Code: "import time\nfor i in range(3):\n    print('line', i, flush=True)\n    time.sleep(0.4)\n"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Events(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text strings.Builder
	var times []time.Time
	var types []string
	var final *sandbox.Result
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		switch ev.Type {
		case "stdout":
			text.WriteString(ev.Text)
			times = append(times, time.Now())
		case "result":
			final = ev.Result
		}
	}
	if text.String() != "line 0\nline 1\nline 2\n" || final == nil || final.Stdout != text.String() ||
		types[0] != "status" || types[len(types)-1] != "result" {
		t.Fatalf("events %v, text %q, result %+v", types, text.String(), final)
	}
	// Live: the lines came as they were printed, 0.4 s apart, not all at the end.
	if len(times) < 2 || times[len(times)-1].Sub(times[0]) < 500*time.Millisecond {
		t.Fatalf("stdout events not spread over the run: %d events, %v", len(times), times)
	}
	if !strings.HasPrefix(s.LastEventID(), "3.") {
		t.Fatalf("last id %q", s.LastEventID())
	}
	// A reader that starts after the end gets the replay.
	var out bytes.Buffer
	if res, err := c.StreamOutput(ctx, id, &out, nil); err != nil || out.String() != text.String() || res.Status != sandbox.StatusSuccess {
		t.Fatalf("replay: %v %q", err, out.String())
	}
}

func TestIntegrationLanguagesHealth(t *testing.T) {
	c := integrationClient(t)
	ctx := ctxT(t)
	h, err := c.Health(ctx)
	if err != nil || h.Status != "ok" || h.Slots < 1 {
		t.Fatalf("%v %+v", err, h)
	}
	ls, err := c.Languages(ctx)
	ok := false
	for _, l := range ls {
		ok = ok || (l.Name == "python" && l.Available && strings.HasPrefix(l.Source, "main"))
	}
	if err != nil || !ok {
		t.Fatalf("%v %+v", err, ls)
	}
}

// The README's quickstart, built and run as written against the daemon.
func TestIntegrationQuickstart(t *testing.T) {
	integrationClient(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command(goBin, "build", "-o", bin, "./examples/quickstart").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "SANDBOXD_ENDPOINT=unix://"+os.Getenv("SANDBOXD_SOCKET"))
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "stdout: 4950\ntimeout after 500 ms\n" {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
}

// A lost connection for real: a proxy in front of the daemon's socket forwards the first
// connection's request, then cuts it while the daemon runs the program (Execute's wait). The SDK
// sends the request again under the same execution_id, and the daemon answers with that execution:
// the program ran once (a session file counts the runs).
func TestIntegrationRetryAfterLostConnection(t *testing.T) {
	integrationClient(t)
	sock := os.Getenv("SANDBOXD_SOCKET")
	if sock == "" {
		sock = "/run/sandboxd/api.sock"
	}
	proxy := filepath.Join(t.TempDir(), "cut.sock")
	l, err := net.Listen("unix", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			cut := atomic.AddInt32(&conns, 1) == 1
			go func(c net.Conn) {
				defer c.Close()
				up, err := net.Dial("unix", sock)
				if err != nil {
					return
				}
				defer up.Close()
				go io.Copy(up, c)
				if cut {
					time.Sleep(300 * time.Millisecond) // the request is in, the program runs
					return
				}
				io.Copy(c, up)
			}(c)
		}
	}()
	c := sandbox.NewClient(sandbox.Config{Endpoint: "unix://" + proxy, MaxRetries: 3, RetryBaseDelay: 50 * time.Millisecond})
	sess := uniq("go-cut")
	res, err := c.Execute(ctxT(t), sandbox.ExecuteRequest{Language: "python", SessionID: sess,
		Code: "import time\nopen('/workspace/runs','a').write('x')\ntime.sleep(1)\nprint(len(open('/workspace/runs').read()))"})
	if err != nil || res.Stdout != "1\n" {
		t.Fatalf("after a lost connection: %v %+v", err, res)
	}
	if n := atomic.LoadInt32(&conns); n < 2 {
		t.Fatalf("the connection was not cut and retried (%d connections)", n)
	}
	direct := integrationClient(t)
	l2, err := direct.ListExecutions(ctxT(t), sandbox.ListFilter{SessionID: sess})
	if err != nil || len(l2.Executions) != 1 || l2.Executions[0].ExecutionID != res.ExecutionID {
		t.Fatalf("executions of the session: %v %+v", err, l2)
	}
	direct.DeleteSession(ctxT(t), sess)
}

// A keyed TCP listener for real (last: it restarts the daemon, and restarts it again without the
// listener at the end): the API key as Authorization: Bearer, and the 401 without it.
func TestIntegrationTCPWithAPIKey(t *testing.T) {
	unix := integrationClient(t)
	conf := os.Getenv("SANDBOXD_CONFIG_DIR")
	if conf == "" {
		t.Skip("SANDBOXD_CONFIG_DIR is not set: not in the harness")
	}
	// A free loopback port (the harness may share the host's network namespace).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	keyDir := filepath.Join(conf, "gosdk-keys")
	if err := os.MkdirAll(keyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(keyDir, 0o700)
	var raw [24]byte
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(f, raw[:])
	f.Close()
	key := fmt.Sprintf("%x", raw[:])
	sum := sha256Hex(key)
	keys := filepath.Join(keyDir, "api-keys")
	if err := os.WriteFile(keys, []byte("gosdk sha256:"+sum+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dropin := filepath.Join(conf, "sandboxd.conf.d", "60-gosdk-tcp.conf")
	os.MkdirAll(filepath.Dir(dropin), 0o755)
	if err := os.WriteFile(dropin, []byte("[Daemon]\nListen="+addr+"\nAPIKeysFile="+keys+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	restart := func() {
		if out, err := exec.Command("systemctl", "restart", "sandboxd.service").CombinedOutput(); err != nil {
			t.Fatalf("systemctl restart: %v %s", err, out)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := unix.Health(ctxT(t)); err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the daemon did not come back")
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	t.Cleanup(func() { os.Remove(dropin); os.RemoveAll(keyDir); restart() })
	restart()

	c := sandbox.NewClient(sandbox.Config{Endpoint: "http://" + addr, APIKey: key})
	res, err := c.Execute(ctxT(t), sandbox.ExecuteRequest{Language: "python", Code: "print('over tcp')"})
	if err != nil || res.Stdout != "over tcp\n" {
		t.Fatalf("over TCP with the key: %v %+v", err, res)
	}
	for name, k := range map[string]string{"no key": "", "a wrong key": key + "x"} {
		_, err := sandbox.NewClient(sandbox.Config{Endpoint: "http://" + addr, APIKey: k}).Health(ctxT(t))
		var ae *sandbox.APIError
		if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Code != "unauthorized" {
			t.Fatalf("%s: %v", name, err)
		}
	}
	// The execution is the key's (owner key:gosdk); root on the unix socket, an admin, sees it by
	// its record_id.
	if r, err := unix.GetExecution(ctxT(t), res.RecordID); err != nil || r.ExecutionID != res.ExecutionID {
		t.Fatalf("as root by record_id: %v %+v", err, r)
	}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
