// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	sandbox "github.com/sandboxd/sandboxd/sdk/go"
)

// Run a program and wait for its verdict. (Examples without an Output comment are compiled by
// go test, not run: they need a daemon.)
func ExampleClient_Execute() {
	client := sandbox.NewClient(sandbox.Config{Timeout: 60 * time.Second})
	res, err := client.Execute(context.Background(), sandbox.ExecuteRequest{
		Language: "python",
		Code:     "print(sum(range(100)))",
		Limits:   &sandbox.Limits{TimeoutMS: 10000, MemoryMB: 256},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(res.Stdout) // 4950
}

// Tell the outcomes apart: a program's failure is a *sandbox.Error with its Type and the whole
// Result; a refused request an *sandbox.APIError; anything else a transport error.
func ExampleError() {
	client := sandbox.NewClient(sandbox.Config{})
	res, err := client.Execute(context.Background(), sandbox.ExecuteRequest{
		Language: "python", Code: "while True: pass", Limits: &sandbox.Limits{TimeoutMS: 500},
	})
	var sbErr *sandbox.Error
	var apiErr *sandbox.APIError
	switch {
	case errors.As(err, &sbErr):
		switch sbErr.Type {
		case sandbox.ErrTimeout:
			fmt.Println("timed out; raise limits.timeout_ms or make the program faster")
		case sandbox.ErrOOM:
			fmt.Println("out of memory; raise limits.memory_mb")
		case sandbox.ErrCompile, sandbox.ErrRuntime:
			fmt.Println("the program failed:", sbErr.Result.Stderr)
		case sandbox.ErrInternal:
			fmt.Println("sandboxd's own failure; retrying may help")
		}
		fmt.Println(res.Summary) // the same Result as sbErr.Result
	case errors.As(err, &apiErr):
		fmt.Println("refused:", apiErr.StatusCode, apiErr.Code, apiErr.Field, apiErr.Message)
	case err != nil:
		fmt.Println("transport:", err)
	}
}

// Submit returns at once; Wait (or GetExecution, Events, a callback) follows the execution.
// Cancelling the context of Wait only stops waiting; Cancel stops the program.
func ExampleClient_Submit() {
	client := sandbox.NewClient(sandbox.Config{})
	ctx := context.Background()
	id, err := client.Submit(ctx, sandbox.ExecuteRequest{
		Language:    "python",
		Code:        "import time; time.sleep(1); print('done')",
		CallbackURL: "https://hooks.example.com/sandboxd", // optional
	})
	if err != nil {
		log.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := client.Wait(wctx, id)
	if errors.Is(err, context.DeadlineExceeded) {
		client.Cancel(ctx, id) // the run goes on unless cancelled
		return
	}
	fmt.Println(res.Status, res.Stdout)
}

// Print a program's output as it writes it.
func ExampleClient_StreamOutput() {
	client := sandbox.NewClient(sandbox.Config{})
	ctx := context.Background()
	id, err := client.Submit(ctx, sandbox.ExecuteRequest{Language: "bash",
		Code: "for i in 1 2 3; do echo $i; sleep 1; done"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := client.StreamOutput(ctx, id, os.Stdout, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("exit code", *res.ExitCode)
}

// The events one by one.
func ExampleClient_Events() {
	client := sandbox.NewClient(sandbox.Config{})
	s, err := client.Events(context.Background(), "exec_1")
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			break // io.EOF after the result
		}
		switch ev.Type {
		case "stdout", "stderr":
			fmt.Print(ev.Text)
		case "result":
			fmt.Println("verdict:", ev.Result.Status)
		}
	}
}

// Download what the program wrote to /workspace/output.
func ExampleClient_DownloadArtifact() {
	client := sandbox.NewClient(sandbox.Config{})
	ctx := context.Background()
	res, err := client.Execute(ctx, sandbox.ExecuteRequest{Language: "python",
		Code: "import os; os.makedirs('/workspace/output', exist_ok=True); open('/workspace/output/x.txt','w').write('hi')"})
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create("x.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := client.DownloadArtifact(ctx, res.ExecutionID, "x.txt", f); err != nil {
		log.Fatal(err)
	}
}

// Bound the executions in flight: nodes × slots per node × 0.8.
func ExampleLimiter() {
	limiter := sandbox.NewLimiter(2, 8) // 2 nodes of 8 slots: 12 at a time
	fmt.Println(limiter.Size())

	client := sandbox.NewClient(sandbox.Config{})
	ctx := context.Background()
	var wg sync.WaitGroup
	for _, code := range []string{} { // your programs
		if err := limiter.Acquire(ctx); err != nil {
			break
		}
		wg.Add(1)
		go func(code string) {
			defer wg.Done()
			defer limiter.Release()
			client.Execute(ctx, sandbox.ExecuteRequest{Language: "python", Code: code})
		}(code)
	}
	wg.Wait()
	// Output: 12
}
