// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is an httptest handler that records every request and answers with the next of its
// scripted answers (the last one repeats).
type recorder struct {
	mu      sync.Mutex
	reqs    []recorded
	answers []func(w http.ResponseWriter, r *http.Request)
}

type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                []byte
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), body})
	i := len(rc.reqs) - 1
	if i >= len(rc.answers) {
		i = len(rc.answers) - 1
	}
	a := rc.answers[i]
	rc.mu.Unlock()
	a(w, r)
}

func (rc *recorder) requests() []recorded {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]recorded(nil), rc.reqs...)
}

func jsonAnswer(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func apiErr(status int, code, field string) func(http.ResponseWriter, *http.Request) {
	f := "null"
	if field != "" {
		f = fmt.Sprintf("%q", field)
	}
	return jsonAnswer(status, fmt.Sprintf(`{"error":{"code":%q,"message":"msg of %s","field":%s}}`, code, code, f))
}

// hangUp closes the connection without an answer: a lost connection.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

const okResult = `{"execution_id":"x","status":"success","error_type":null,"exit_code":0,"stdout":"1\n"}`

func newTest(t *testing.T, answers ...func(http.ResponseWriter, *http.Request)) (*Client, *recorder) {
	t.Helper()
	rc := &recorder{answers: answers}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	c := NewClient(Config{Endpoint: srv.URL, APIKey: "k3y", MaxRetries: 3, RetryBaseDelay: time.Millisecond})
	return c, rc
}

func py(code string) ExecuteRequest { return ExecuteRequest{Language: "python", Code: code} }

func TestRetryThenSuccess(t *testing.T) {
	for _, first := range []func(http.ResponseWriter, *http.Request){
		apiErr(503, "shutting_down", ""), apiErr(429, "queue_full", ""), apiErr(503, "store_error", ""), hangUp,
	} {
		c, rc := newTest(t, first, first, jsonAnswer(200, okResult))
		r, err := c.Execute(context.Background(), py("print(1)"))
		if err != nil || r.Stdout != "1\n" {
			t.Fatalf("Execute after two refusals: %v %+v", err, r)
		}
		if n := len(rc.requests()); n != 3 {
			t.Fatalf("want 3 attempts, got %d", n)
		}
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	cases := []struct {
		status      int
		code, field string
	}{
		{400, "invalid_request", "limits.memory_mb"}, {409, "conflict", ""}, {404, "not_found", ""},
		{429, "storage_quota_exceeded", ""}, {500, "internal", ""}, {507, "store_error", ""},
	}
	for _, tc := range cases {
		c, rc := newTest(t, apiErr(tc.status, tc.code, tc.field), jsonAnswer(200, okResult))
		_, err := c.Execute(context.Background(), py("print(1)"))
		var ae *APIError
		if !errors.As(err, &ae) {
			t.Fatalf("%d: want *APIError, got %T %v", tc.status, err, err)
		}
		if ae.StatusCode != tc.status || ae.Code != tc.code || ae.Field != tc.field || ae.Message != "msg of "+tc.code {
			t.Fatalf("APIError fields: %+v", ae)
		}
		var se *Error
		if errors.As(err, &se) {
			t.Fatalf("a refusal must not be a *sandbox.Error")
		}
		if n := len(rc.requests()); n != 1 {
			t.Fatalf("%d %s: retried (%d attempts)", tc.status, tc.code, n)
		}
	}
}

func TestMaxRetriesBound(t *testing.T) {
	for _, max := range []int{1, 2, 5} {
		rc := &recorder{answers: []func(http.ResponseWriter, *http.Request){apiErr(503, "shutting_down", "")}}
		srv := httptest.NewServer(rc)
		c := NewClient(Config{Endpoint: srv.URL, MaxRetries: max, RetryBaseDelay: time.Millisecond})
		_, err := c.GetExecution(context.Background(), "e1")
		srv.Close()
		var ae *APIError
		if !errors.As(err, &ae) || ae.StatusCode != 503 {
			t.Fatalf("want the last 503, got %v", err)
		}
		if n := len(rc.requests()); n != max+1 {
			t.Fatalf("MaxRetries=%d: %d attempts", max, n)
		}
	}
	// Negative: no retry at all.
	rc := &recorder{answers: []func(http.ResponseWriter, *http.Request){apiErr(503, "shutting_down", "")}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	c := NewClient(Config{Endpoint: srv.URL, MaxRetries: -1})
	c.GetExecution(context.Background(), "e1")
	if n := len(rc.requests()); n != 1 {
		t.Fatalf("MaxRetries=-1: %d attempts", n)
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	ra := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		apiErr(429, "queue_full", "")(w, r)
	}
	c, rc := newTest(t, ra, jsonAnswer(200, okResult))
	t0 := time.Now()
	if _, err := c.GetExecution(context.Background(), "e1"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 900*time.Millisecond {
		t.Fatalf("Retry-After: 1 not honoured: retried after %v", d)
	}
	if len(rc.requests()) != 2 {
		t.Fatal("want 2 attempts")
	}
}

var idSyntax = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func TestIdempotentRetriesSendOneID(t *testing.T) {
	c, rc := newTest(t, hangUp, apiErr(503, "store_error", ""), jsonAnswer(202, `{"execution_id":"ignored-here","status":"queued"}`))
	id, err := c.Submit(context.Background(), py("print(1)"))
	if err != nil {
		t.Fatal(err)
	}
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("want 3 attempts, got %d", len(reqs))
	}
	var ids []string
	for _, r := range reqs {
		var body map[string]interface{}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		s, _ := body["execution_id"].(string)
		ids = append(ids, s)
		if !bytes.Equal(r.Body, reqs[0].Body) {
			t.Fatalf("attempts sent different bodies:\n%s\n%s", reqs[0].Body, r.Body)
		}
	}
	if !idSyntax.MatchString(ids[0]) || ids[0] != ids[1] || ids[1] != ids[2] {
		t.Fatalf("execution ids of the attempts: %q", ids)
	}
	if id != "ignored-here" {
		t.Fatalf("Submit returns the server's id, got %q", id)
	}
	// Two calls get two different ids.
	c2, rc2 := newTest(t, jsonAnswer(202, `{"execution_id":"a","status":"queued"}`))
	c2.Submit(context.Background(), py("1"))
	c2.Submit(context.Background(), py("1"))
	r2 := rc2.requests()
	if bytes.Equal(r2[0].Body, r2[1].Body) {
		t.Fatal("two Submits sent the same execution_id")
	}
}

func TestCallersIDKept(t *testing.T) {
	c, rc := newTest(t, hangUp, jsonAnswer(200, okResult))
	req := py("print(1)")
	req.ExecutionID = "mine.1"
	if _, err := c.Execute(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	for _, r := range rc.requests() {
		if !strings.Contains(string(r.Body), `"execution_id":"mine.1"`) {
			t.Fatalf("the caller's id was not sent: %s", r.Body)
		}
		if r.Query != "wait=true" || r.Method != "POST" || r.Path != "/v1/executions" {
			t.Fatalf("Execute sent %s %s?%s", r.Method, r.Path, r.Query)
		}
	}
}

func TestRequestJSON(t *testing.T) {
	c, rc := newTest(t, jsonAnswer(200, okResult))
	_, err := c.Execute(context.Background(), ExecuteRequest{
		ExecutionID: "e", SessionID: "s", Language: "python", Code: "print('<&>')",
		Limits: &Limits{TimeoutMS: 1000, MemoryMB: 64, CPUCores: 0.5, DiskMB: 10, Tasks: 16},
		Env:    map[string]string{"A": "b"}, Stdin: "in", Args: []string{"x", ""}, Seed: 7,
		Files:   []File{InlineFile("a.txt", []byte("hello\n")), {Path: "b", URL: "https://example.com/b"}},
		Network: &Network{Allow: []string{"pypi.org"}}, Environment: "python-data", Start: "cold",
		CallbackURL: "https://hooks.example.com/x",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rc.requests()[0]
	if r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer k3y" {
		t.Fatalf("headers: %v", r.Header)
	}
	var got, want interface{}
	json.Unmarshal(r.Body, &got)
	json.Unmarshal([]byte(`{"execution_id":"e","session_id":"s","language":"python","code":"print('<&>')",
		"limits":{"timeout_ms":1000,"memory_mb":64,"cpu_cores":0.5,"disk_mb":10,"tasks":16},
		"env":{"A":"b"},"stdin":"in","args":["x",""],"seed":7,
		"files":[{"path":"a.txt","content_base64":"aGVsbG8K"},{"path":"b","url":"https://example.com/b"}],
		"network":{"allow":["pypi.org"]},"environment":"python-data","start":"cold",
		"callback_url":"https://hooks.example.com/x"}`), &want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("request body\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(string(r.Body), "<&>") {
		t.Fatalf("code was HTML-escaped: %s", r.Body)
	}
	// A minimal request has only what was set.
	c.Execute(context.Background(), py("1"))
	var min map[string]interface{}
	json.Unmarshal(rc.requests()[1].Body, &min)
	if len(min) != 3 {
		t.Fatalf("minimal request has extra fields: %v", min)
	}
}

func TestErrorMapping(t *testing.T) {
	cases := map[string]ErrorType{
		`"status":"failed","error_type":"compile_error"`:  ErrCompile,
		`"status":"failed","error_type":"runtime_error"`:  ErrRuntime,
		`"status":"failed","error_type":"timeout"`:        ErrTimeout,
		`"status":"failed","error_type":"oom"`:            ErrOOM,
		`"status":"failed","error_type":"resource_limit"`: ErrResourceLimit,
		`"status":"failed","error_type":"internal_error"`: ErrInternal,
		`"status":"failed","error_type":"input_error"`:    ErrInput,
		`"status":"cancelled","error_type":null`:          ErrCancelled,
		`"status":"failed","error_type":null`:             ErrUnknown,
	}
	for frag, want := range cases {
		body := `{"execution_id":"e9",` + frag + `,"exit_code":null,"stderr":"boom","reason":"why"}`
		c, _ := newTest(t, jsonAnswer(200, body))
		res, err := c.Execute(context.Background(), py("x"))
		wrapped := fmt.Errorf("my layer: %w", err)
		var sbErr *Error
		if !errors.As(wrapped, &sbErr) {
			t.Fatalf("%s: not a *sandbox.Error through wrapping: %v", frag, err)
		}
		if sbErr.Type != want || sbErr.Result == nil || sbErr.Result.Stderr != "boom" || res != sbErr.Result {
			t.Fatalf("%s: Type %q Result %+v", frag, sbErr.Type, sbErr.Result)
		}
		if res.ExitCode != nil {
			t.Fatalf("exit_code null must be nil")
		}
		if !strings.Contains(err.Error(), "e9") || !strings.Contains(err.Error(), string(want)) {
			t.Fatalf("message: %v", err)
		}
		var ae *APIError
		if errors.As(err, &ae) {
			t.Fatal("a failed program must not be an *APIError")
		}
		// The same through Wait.
		c, _ = newTest(t, jsonAnswer(200, body))
		if _, err := c.Wait(context.Background(), "e9"); !errors.As(err, &sbErr) || sbErr.Type != want {
			t.Fatalf("Wait: %v", err)
		}
	}
	// Success: no error, exit code 0 kept.
	c, _ := newTest(t, jsonAnswer(200, okResult))
	r, err := c.Execute(context.Background(), py("x"))
	if err != nil || r.ExitCode == nil || *r.ExitCode != 0 || r.Status != StatusSuccess {
		t.Fatalf("success: %v %+v", err, r)
	}
	// A poll of a failed execution is not an error.
	c, _ = newTest(t, jsonAnswer(200, `{"execution_id":"e","status":"failed","error_type":"oom"}`))
	if r, err := c.GetExecution(context.Background(), "e"); err != nil || r.Err() == nil {
		t.Fatalf("GetExecution: %v %v", err, r)
	}
}

func TestContextCancelWhileWaiting(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	block := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	c, rc := newTest(t, block)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 := time.Now()
	res, err := c.Execute(ctx, py("import time; time.sleep(60)"))
	d := time.Since(t0)
	if !errors.Is(err, context.Canceled) || res != nil {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if d > 2*time.Second {
		t.Fatalf("Execute returned %v after the cancel", d)
	}
	time.Sleep(100 * time.Millisecond)
	reqs := rc.requests()
	if len(reqs) != 1 {
		t.Fatalf("want exactly one request (no retry, no cancel), got %d", len(reqs))
	}
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/cancel") {
			t.Fatal("a cancel request was sent")
		}
	}
	// A deadline: DeadlineExceeded, also through Config.Timeout.
	c2 := NewClient(Config{Endpoint: c.base.String(), Timeout: 150 * time.Millisecond})
	if _, err := c2.Wait(context.Background(), "e"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Config.Timeout: %v", err)
	}
}

func TestEndpoints(t *testing.T) {
	good := map[string]string{
		"":                              "http://sandboxd",
		"unix:///run/sandboxd/api.sock": "http://sandboxd",
		"/tmp/x.sock":                   "http://sandboxd",
		"http://127.0.0.1:8080":         "http://127.0.0.1:8080",
		"https://sb.example:8443/":      "https://sb.example:8443",
	}
	for ep, base := range good {
		c := NewClient(Config{Endpoint: ep})
		if c.ConfigError() != nil || c.base.String() != base {
			t.Fatalf("%q: %v %v", ep, c.ConfigError(), c.base)
		}
	}
	sock, _, _ := parseEndpoint("")
	if sock != "/run/sandboxd/api.sock" {
		t.Fatalf("default socket %q", sock)
	}
	for _, ep := range []string{"ftp://x", "unix://relative/x", "http://", "unix:x"} {
		c := NewClient(Config{Endpoint: ep})
		if c.ConfigError() == nil {
			t.Fatalf("%q accepted", ep)
		}
		if _, err := c.Health(context.Background()); err == nil {
			t.Fatalf("%q: a call succeeded", ep)
		}
	}
	// The default transport keeps 20 idle connections per host.
	c := NewClient(Config{})
	if tr := c.hc.Transport.(*http.Transport); tr.MaxIdleConnsPerHost != 20 {
		t.Fatalf("MaxIdleConnsPerHost %d", tr.MaxIdleConnsPerHost)
	}
}

func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "api.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	rc := &recorder{answers: []func(http.ResponseWriter, *http.Request){jsonAnswer(200, `{"status":"ok","slots":8}`)}}
	srv := httptest.NewUnstartedServer(rc)
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	for _, ep := range []string{"unix://" + sock, sock} {
		c := NewClient(Config{Endpoint: ep})
		h, err := c.Health(context.Background())
		if err != nil || h.Status != "ok" || h.Slots != 8 {
			t.Fatalf("%s: %v %+v", ep, err, h)
		}
		if a := rc.requests()[0].Header.Get("Authorization"); a != "" {
			t.Fatalf("no key configured, yet Authorization: %q", a)
		}
	}
	// A caller's own http.Client with an *http.Transport still dials the socket.
	c := NewClient(Config{Endpoint: "unix://" + sock, HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 5}}})
	if _, err := c.Health(context.Background()); err != nil {
		t.Fatalf("own transport: %v", err)
	}
	os.Remove(sock)
}

func TestSSEParsing(t *testing.T) {
	stream := "id: 1.0.0\r\nevent: status\r\ndata: {\"status\":\"queued\"}\r\n\r\n" +
		": keepalive\n\n" +
		"id: 2.0.0\nevent: status\ndata: {\"status\":\"running\",\"start\":\"cold\"}\n\n" +
		"id: 2.6.0\nevent: stdout\ndata: {\"text\":\"first\\n\"}\n\n" +
		"id: 2.6.4\nevent: stderr\ndata:{\"text\":\"err\\n\"}\n\n" +
		"id: 2.9.4\nevent: elided\ndata: {\"stream\":\"stdout\",\"bytes\":3}\n\n" +
		"id: 3.9.4\nevent: result\ndata: {\"execution_id\":\"e\",\"status\":\"failed\",\"error_type\":\"runtime_error\",\"stdout\":\"first\\nabc\"}\n\n"
	c, rc := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream)
	})
	s, err := c.Events(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s%s%s%d", ev.ID, ev.Type, ev.Status, ev.Text, ev.Stream, ev.Bytes))
		if ev.Type == "result" && (ev.Result == nil || ev.Result.ErrorType != ErrRuntime) {
			t.Fatalf("result event: %+v", ev.Result)
		}
	}
	want := []string{"1.0.0 status queued0", "2.0.0 status running0", "2.6.0 stdout first\n0",
		"2.6.4 stderr err\n0", "2.9.4 elided stdout3", "3.9.4 result 0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events\n got %q\nwant %q", got, want)
	}
	if rc.requests()[0].Path != "/v1/executions/e/events" || rc.requests()[0].Header.Get("Accept") != "text/event-stream" {
		t.Fatalf("path %s", rc.requests()[0].Path)
	}
	// StreamOutput: the text into the writers, the result with its error.
	c, _ = newTest(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, stream) })
	var out, errb bytes.Buffer
	res, err := c.StreamOutput(context.Background(), "e", &out, &errb)
	var sbErr *Error
	if !errors.As(err, &sbErr) || sbErr.Type != ErrRuntime || res == nil || out.String() != "first\n" || errb.String() != "err\n" {
		t.Fatalf("StreamOutput: %v %q %q", err, out.String(), errb.String())
	}
}

func TestSSEReconnectsWithLastEventID(t *testing.T) {
	first := func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "id: 1.0.0\nevent: status\ndata: {\"status\":\"queued\"}\n\n"+
			"id: 2.3.0\nevent: stdout\ndata: {\"text\":\"ab\\n\"}\n\nid: 2.5.0\nevent: stdout\ndata: {\"te") // cut mid-event
		w.(http.Flusher).Flush()
		hangUp(w, r)
	}
	second := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Last-Event-ID") != "2.3.0" {
			http.Error(w, "bad Last-Event-ID "+r.Header.Get("Last-Event-ID"), 400)
			return
		}
		io.WriteString(w, "id: 2.5.0\nevent: stdout\ndata: {\"text\":\"cd\"}\n\n"+
			"id: 3.5.0\nevent: result\ndata: {\"execution_id\":\"e\",\"status\":\"success\"}\n\n")
	}
	c, rc := newTest(t, first, second)
	var out bytes.Buffer
	res, err := c.StreamOutput(context.Background(), "e", &out, nil)
	if err != nil || res.Status != StatusSuccess || out.String() != "ab\ncd" {
		t.Fatalf("after a reconnect: %v %q", err, out.String())
	}
	if n := len(rc.requests()); n != 2 {
		t.Fatalf("want 2 connections, got %d", n)
	}
}

func TestDownloadArtifactStreams(t *testing.T) {
	const size = 8 << 20
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	firstSeen := make(chan struct{})
	var srvURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/executions/e1/artifacts", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"execution_id":"e1","status":"success","artifacts":[{"path":"out dir/x.bin","size":%d,"url":"/v1/executions/e1/artifacts/out%%20dir/x.bin?expires=9&signature=ab"}]}`, size)
	})
	mux.HandleFunc("/v1/executions/e1/artifacts/out dir/x.bin", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("signature") != "ab" || r.URL.EscapedPath() != "/v1/executions/e1/artifacts/out%20dir/x.bin" {
			http.Error(w, "bad url "+r.URL.String(), 404)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.Write(chunk)
		w.(http.Flusher).Flush()
		// The rest only once the client's writer has the first chunk: a client that read the
		// whole body before writing would never get there.
		select {
		case <-firstSeen:
		case <-time.After(10 * time.Second):
			return
		}
		for n := len(chunk); n < size; n += len(chunk) {
			w.Write(chunk)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	srvURL = srv.URL
	c := NewClient(Config{Endpoint: srvURL})
	w := &notifyWriter{h: sha256.New(), first: firstSeen}
	n, err := c.DownloadArtifact(context.Background(), "e1", "out dir/x.bin", w)
	if err != nil || n != size || w.n != size {
		t.Fatalf("download: %v n=%d written=%d", err, n, w.n)
	}
	want := sha256.New()
	for i := 0; i < size/len(chunk); i++ {
		want.Write(chunk)
	}
	if !bytes.Equal(w.h.Sum(nil), want.Sum(nil)) {
		t.Fatal("content differs")
	}
	var ae *APIError
	if _, err := c.DownloadArtifact(context.Background(), "e1", "nope", io.Discard); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("missing artifact: %v", err)
	}
}

type notifyWriter struct {
	h interface {
		Write([]byte) (int, error)
		Sum([]byte) []byte
	}
	n     int64
	first chan struct{}
	once  sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	w.once.Do(func() { close(w.first) })
	return w.h.Write(p)
}

func TestSessionFilePaths(t *testing.T) {
	c, rc := newTest(t, jsonAnswer(201, `{"path":"in/a b.csv","size":3}`))
	n, err := c.PutSessionFile(context.Background(), "s1", "in/a b.csv", strings.NewReader("abc"), 3)
	if err != nil || n != 3 {
		t.Fatal(err, n)
	}
	r := rc.requests()[0]
	if r.Method != "PUT" || r.Path != "/v1/sessions/s1/files/in/a%20b.csv" || string(r.Body) != "abc" {
		t.Fatalf("PUT %s %q", r.Path, r.Body)
	}
	c, rc = newTest(t, jsonAnswer(200, `{"path":"","entries":[{"name":"x","type":"file","size":1}],"truncated":false}`))
	l, err := c.ListSessionFiles(context.Background(), "s1", "")
	if err != nil || len(l.Entries) != 1 || rc.requests()[0].Path != "/v1/sessions/s1/files/" {
		t.Fatalf("list: %v %+v %s", err, l, rc.requests()[0].Path)
	}
	// A seekable upload is resent after a 503 from its start.
	c, rc = newTest(t, apiErr(503, "shutting_down", ""), jsonAnswer(201, `{"path":"f","size":5}`))
	if _, err := c.PutSessionFile(context.Background(), "s1", "f", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	if reqs := rc.requests(); len(reqs) != 2 || string(reqs[1].Body) != "hello" {
		t.Fatalf("resent upload: %d", len(reqs))
	}
	// DELETE is not resent after a lost connection.
	c, rc = newTest(t, hangUp, jsonAnswer(200, `{"deleted":true}`))
	if err := c.DeleteSession(context.Background(), "s1"); err == nil || len(rc.requests()) != 1 {
		t.Fatalf("DeleteSession after a hang-up: %v, %d requests", err, len(rc.requests()))
	}
}

func TestListExecutionsPaging(t *testing.T) {
	c, rc := newTest(t,
		jsonAnswer(200, `{"executions":[{"execution_id":"a"},{"execution_id":"b"}],"next_cursor":"c1"}`),
		jsonAnswer(200, `{"executions":[{"execution_id":"c"}],"next_cursor":null}`))
	var ids []string
	err := c.EachExecution(context.Background(), ListFilter{SessionID: "s", Failed: true, Limit: 2},
		func(r *Result) error { ids = append(ids, r.ExecutionID); return nil })
	if err != nil || strings.Join(ids, ",") != "a,b,c" {
		t.Fatalf("%v %v", err, ids)
	}
	reqs := rc.requests()
	if reqs[0].Query != "failed=true&limit=2&session_id=s" || reqs[1].Query != "cursor=c1&failed=true&limit=2&session_id=s" {
		t.Fatalf("queries %q %q", reqs[0].Query, reqs[1].Query)
	}
}

func TestLimiter(t *testing.T) {
	if n := NewLimiter(3, 8).Size(); n != 19 {
		t.Fatalf("3 nodes × 8 slots × 0.8 = 19, got %d", n)
	}
	if n := NewLimiter(1, 1).Size(); n != 1 {
		t.Fatalf("at least 1, got %d", n)
	}
	l := NewLimiterSize(2)
	ctx := context.Background()
	if l.Acquire(ctx) != nil || l.Acquire(ctx) != nil || l.TryAcquire() {
		t.Fatal("2 slots")
	}
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := l.Acquire(tctx); !errors.Is(err, context.DeadlineExceeded) || l.InUse() != 2 {
		t.Fatalf("a full limiter: %v", err)
	}
	l.Release()
	if !l.TryAcquire() {
		t.Fatal("a released slot is free")
	}
}

// The README's quickstart is examples/quickstart/main.go (which the integration test runs), byte
// for byte from "package main" on.
func TestReadmeQuickstartIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("examples/quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	prog := string(src[bytes.Index(src, []byte("package main")):])
	start := bytes.Index(readme, []byte("```go\npackage main"))
	if start < 0 {
		t.Fatal("README has no ```go block starting with package main")
	}
	block := string(readme[start+len("```go\n"):])
	block = block[:strings.Index(block, "```")]
	if block != prog {
		t.Fatalf("README's quickstart differs from examples/quickstart/main.go:\n%s", block)
	}
}

func TestEventsCloseEndsABlockedNext(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	c, _ := newTest(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "id: 1.0.0\nevent: status\ndata: {\"status\":\"queued\"}\n\n")
		w.(http.Flusher).Flush()
		select { // a silent program
		case <-release:
		case <-r.Context().Done():
		}
	})
	s, err := c.Events(context.Background(), "e")
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := s.Next(); err != nil || ev.Status != StatusQueued {
		t.Fatalf("first event: %v %+v", err, ev)
	}
	time.AfterFunc(100*time.Millisecond, func() { s.Close() })
	done := make(chan error, 1)
	go func() { _, err := s.Next(); done <- err }()
	select {
	case err := <-done:
		if err != io.EOF {
			t.Fatalf("Next after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Next")
	}
}

func TestBackoffBoundsAndJitter(t *testing.T) {
	c := NewClient(Config{RetryBaseDelay: 100 * time.Millisecond})
	for n := 0; n < 12; n++ {
		want := 100 * time.Millisecond << uint(n)
		if want > 5*time.Second {
			want = 5 * time.Second
		}
		seen := map[time.Duration]bool{}
		for i := 0; i < 50; i++ {
			d := c.backoff(n, nil)
			if d < want/2 || d > want {
				t.Fatalf("retry %d: %v outside [%v, %v]", n, d, want/2, want)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("retry %d: no jitter (%d distinct delays)", n, len(seen))
		}
	}
	if d := c.backoff(0, &APIError{RetryAfter: 2}); d < 2*time.Second {
		t.Fatalf("Retry-After: 2 gave %v", d)
	}
	if d := c.backoff(0, &APIError{RetryAfter: 3600}); d > 30*time.Second {
		t.Fatalf("Retry-After capped at 30 s, got %v", d)
	}
}
