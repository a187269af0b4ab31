// SPDX-License-Identifier: LGPL-2.1-or-later

// sdk_go: the Go SDK's cost per call (issue 19). N sequential Execute calls of python print(1)
// through the SDK and N through raw net/http (a prebuilt JSON body, POST ?wait=true, body read
// and its status checked), interleaved call by call (the order alternating) on the same unix
// socket, each with its own keep-alive connection pool. Reports p50/p95 of each and the SDK's
// overhead: the median of the paired differences (SDK call i − raw call i) and the difference of
// the medians. A second, daemon-free leg does the same against a stub server on a unix socket of
// its own that answers every POST with a recorded execution object at once: the client's own cost
// without the daemon's noise. Run by bench/run --sdk-go inside the harness.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	sandbox "github.com/sandboxd/sandboxd/sdk/go"
)

type rawClient struct {
	hc *http.Client
}

func newRaw(sock string) *rawClient {
	t := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConnsPerHost: 20,
	}
	return &rawClient{hc: &http.Client{Transport: t}}
}

var rawBody = []byte(`{"language":"python","code":"print(1)"}`)

// execute returns the run's start ("warm" or "cold").
func (r *rawClient) execute() (string, error) {
	req, _ := http.NewRequest("POST", "http://sandboxd/v1/executions?wait=true", bytes.NewReader(rawBody))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != 200 || !bytes.Contains(data, []byte(`"status":"success"`)) {
		return "", fmt.Errorf("raw: HTTP %d %.200s", resp.StatusCode, data)
	}
	if bytes.Contains(data, []byte(`"start":"warm"`)) {
		return "warm", nil
	}
	return "cold", nil
}

func sdkExecute(c *sandbox.Client) (string, error) {
	res, err := c.Execute(context.Background(), sandbox.ExecuteRequest{Language: "python", Code: "print(1)"})
	if err != nil {
		return "", err
	}
	if res.Stdout != "1\n" {
		return "", fmt.Errorf("sdk: stdout %q", res.Stdout)
	}
	return res.Start, nil
}

type stats struct {
	P50MS  float64 `json:"p50_ms"`
	P95MS  float64 `json:"p95_ms"`
	MeanMS float64 `json:"mean_ms"`
	N      int     `json:"n"`
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

func summarize(ms []float64) stats {
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return stats{P50MS: pct(s, 0.5), P95MS: pct(s, 0.95), MeanMS: sum / float64(len(s)), N: len(s)}
}

type leg struct {
	SDK               stats   `json:"sdk"`
	Raw               stats   `json:"raw"`
	OverheadPairedP50 float64 `json:"sdk_overhead_paired_p50_ms"`
	OverheadP50Diff   float64 `json:"sdk_overhead_p50_diff_ms"`
	// By the runs' start: warm (a unit of the pool) or cold, and the pairs where both were warm.
	SDKByStart          map[string]stats `json:"sdk_by_start,omitempty"`
	RawByStart          map[string]stats `json:"raw_by_start,omitempty"`
	BothWarmPairs       int              `json:"both_warm_pairs,omitempty"`
	OverheadBothWarmP50 float64          `json:"sdk_overhead_paired_p50_both_warm_ms,omitempty"`
}

// run interleaves n calls of each, alternating which goes first.
func run(n int, sdk, raw func() (string, error)) (leg, error) {
	var s, r, d, dw []float64
	ss, rs := map[string][]float64{}, map[string][]float64{}
	for i := 0; i < n; i++ {
		var ts, tr float64
		var starts, startr string
		for k := 0; k < 2; k++ {
			first := (i+k)%2 == 0
			t0 := time.Now()
			var err error
			var start string
			if first {
				start, err = sdk()
			} else {
				start, err = raw()
			}
			el := float64(time.Since(t0).Nanoseconds()) / 1e6
			if err != nil {
				return leg{}, fmt.Errorf("call %d: %w", i, err)
			}
			if first {
				ts, starts = el, start
			} else {
				tr, startr = el, start
			}
		}
		s, r, d = append(s, ts), append(r, tr), append(d, ts-tr)
		ss[starts] = append(ss[starts], ts)
		rs[startr] = append(rs[startr], tr)
		if starts == "warm" && startr == "warm" {
			dw = append(dw, ts-tr)
		}
	}
	l := leg{SDK: summarize(s), Raw: summarize(r)}
	sort.Float64s(d)
	l.OverheadPairedP50 = pct(d, 0.5)
	l.OverheadP50Diff = l.SDK.P50MS - l.Raw.P50MS
	if len(ss) > 1 || len(rs) > 1 || ss["warm"] != nil {
		l.SDKByStart, l.RawByStart = map[string]stats{}, map[string]stats{}
		for k, v := range ss {
			l.SDKByStart[k] = summarize(v)
		}
		for k, v := range rs {
			l.RawByStart[k] = summarize(v)
		}
		sort.Float64s(dw)
		l.BothWarmPairs = len(dw)
		l.OverheadBothWarmP50 = pct(dw, 0.5)
	}
	return l, nil
}

// stub serves a recorded execution object for every request, on a unix socket of its own.
func stub(dir string, answer []byte) (string, func(), error) {
	sock := filepath.Join(dir, "stub.sock")
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(answer)
	})}
	go srv.Serve(l)
	return sock, func() { srv.Close(); os.Remove(sock) }, nil
}

func main() {
	n := flag.Int("n", 1000, "calls of each kind")
	stubN := flag.Int("stub-n", 5000, "calls of each kind against the stub server (0: skip)")
	sock := flag.String("socket", os.Getenv("SANDBOXD_SOCKET"), "sandboxd's socket")
	results := flag.String("results", "", "write the results as JSON here")
	flag.Parse()
	if *sock == "" {
		*sock = "/run/sandboxd/api.sock"
	}
	c := sandbox.NewClient(sandbox.Config{Endpoint: "unix://" + *sock})
	raw := newRaw(*sock)
	sdk := func() (string, error) { return sdkExecute(c) }

	// Warm up both (connections, the pool) and keep one real answer for the stub.
	for i := 0; i < 20; i++ {
		if _, err := sdk(); err != nil {
			fmt.Fprintln(os.Stderr, "warm-up:", err)
			os.Exit(1)
		}
		if _, err := raw.execute(); err != nil {
			fmt.Fprintln(os.Stderr, "warm-up:", err)
			os.Exit(1)
		}
	}
	var recorded json.RawMessage
	{
		req, _ := http.NewRequest("POST", "http://sandboxd/v1/executions?wait=true", bytes.NewReader(rawBody))
		req.Header.Set("Content-Type", "application/json")
		resp, err := raw.hc.Do(req)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		recorded, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}

	t0 := time.Now()
	daemon, err := run(*n, sdk, raw.execute)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wall := time.Since(t0)

	out := map[string]interface{}{
		"bench": "sdk-go", "issue": 19, "date": time.Now().UTC().Format(time.RFC3339),
		"go": runtime.Version(), "calls_each": *n, "program": "python print(1)",
		"daemon": daemon, "daemon_wall_s": wall.Seconds(),
		"note": "interleaved, sequential, one keep-alive pool each; raw = net/http with a prebuilt JSON body, body read, status checked; SDK = Execute (body marshalled, execution_id generated, full Result decoded)",
	}
	fmt.Printf("Go SDK vs raw HTTP, %d sequential Execute calls each of python print(1), interleaved (%s)\n", *n, runtime.Version())
	fmt.Printf("%-22s %9s %9s %9s\n", "", "p50 ms", "p95 ms", "mean ms")
	fmt.Printf("%-22s %9.3f %9.3f %9.3f\n", "daemon: SDK", daemon.SDK.P50MS, daemon.SDK.P95MS, daemon.SDK.MeanMS)
	fmt.Printf("%-22s %9.3f %9.3f %9.3f\n", "daemon: raw HTTP", daemon.Raw.P50MS, daemon.Raw.P95MS, daemon.Raw.MeanMS)
	for _, k := range []string{"warm", "cold"} {
		if st, ok := daemon.SDKByStart[k]; ok {
			fmt.Printf("%-22s %9.3f %9.3f %9.3f  (%d runs)\n", "daemon: SDK, "+k, st.P50MS, st.P95MS, st.MeanMS, st.N)
		}
		if st, ok := daemon.RawByStart[k]; ok {
			fmt.Printf("%-22s %9.3f %9.3f %9.3f  (%d runs)\n", "daemon: raw, "+k, st.P50MS, st.P95MS, st.MeanMS, st.N)
		}
	}
	fmt.Printf("SDK overhead per call, pairs where both ran warm (%d): paired p50 %.3f ms\n", daemon.BothWarmPairs, daemon.OverheadBothWarmP50)
	fmt.Printf("SDK overhead per call: paired p50 %.3f ms, p50 difference %.3f ms\n", daemon.OverheadPairedP50, daemon.OverheadP50Diff)

	if *stubN > 0 {
		dir, _ := os.MkdirTemp("", "sdk-go-bench")
		ssock, stop, err := stub(dir, recorded)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		sc := sandbox.NewClient(sandbox.Config{Endpoint: "unix://" + ssock})
		sraw := newRaw(ssock)
		st, err := run(*stubN, func() (string, error) { return sdkExecute(sc) }, sraw.execute)
		stop()
		os.RemoveAll(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out["stub"] = st
		out["stub_calls_each"] = *stubN
		out["stub_answer_bytes"] = len(recorded)
		fmt.Printf("%-22s %9.3f %9.3f %9.3f\n", "stub: SDK", st.SDK.P50MS, st.SDK.P95MS, st.SDK.MeanMS)
		fmt.Printf("%-22s %9.3f %9.3f %9.3f\n", "stub: raw HTTP", st.Raw.P50MS, st.Raw.P95MS, st.Raw.MeanMS)
		fmt.Printf("stub (client cost only): SDK overhead paired p50 %.3f ms, p50 difference %.3f ms\n",
			st.OverheadPairedP50, st.OverheadP50Diff)
	}
	if *results != "" {
		data, _ := json.MarshalIndent(out, "", "  ")
		if err := os.WriteFile(*results, append(data, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("results:", *results)
	}
}
