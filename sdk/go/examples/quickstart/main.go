// SPDX-License-Identifier: LGPL-2.1-or-later

// Quickstart: run a Python program in sandboxd and tell its outcomes apart. This is the program of
// sdk/go/README.md, run as written by the SDK's integration test.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	sandbox "github.com/sandboxd/sandboxd/sdk/go"
)

func main() {
	client := sandbox.NewClient(sandbox.Config{
		Endpoint:   os.Getenv("SANDBOXD_ENDPOINT"), // "" is unix:///run/sandboxd/api.sock
		APIKey:     os.Getenv("SANDBOXD_API_KEY"),  // only TCP listeners need one
		Timeout:    60 * time.Second,
		MaxRetries: 3,
	})
	ctx := context.Background()

	// A program that succeeds.
	res, err := client.Execute(ctx, sandbox.ExecuteRequest{
		Language: "python",
		Code:     "print(sum(range(100)))",
		Limits:   &sandbox.Limits{TimeoutMS: 10000, MemoryMB: 256},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stdout: %s", res.Stdout) // stdout: 4950

	// A program that runs past its time limit.
	_, err = client.Execute(ctx, sandbox.ExecuteRequest{
		Language: "python",
		Code:     "while True: pass",
		Limits:   &sandbox.Limits{TimeoutMS: 500},
	})
	var sbErr *sandbox.Error
	if errors.As(err, &sbErr) {
		switch sbErr.Type {
		case sandbox.ErrTimeout:
			fmt.Printf("timeout after %d ms\n", sbErr.Result.Limits.TimeoutMS)
		case sandbox.ErrOOM:
			fmt.Println("out of memory: raise memory_mb")
		case sandbox.ErrInternal:
			fmt.Println("sandboxd failed: retry")
		default:
			fmt.Println("failed:", sbErr.Type, sbErr.Result.Stderr)
		}
	} else if err != nil {
		log.Fatal(err) // refused (*sandbox.APIError) or a transport error
	}
}
