// SPDX-License-Identifier: LGPL-2.1-or-later

// Package sandbox is the Go client of sandboxd, the daemon that runs untrusted code in transient
// systemd units. It speaks sandboxd's HTTP/JSON API (docs/http-api.md) on the unix socket
// (unix:///run/sandboxd/api.sock, the default) or on a keyed TCP listener (http://host:port with
// an API key). It uses the standard library only.
//
// Import it under the name sandbox (the directory is sdk/go):
//
//	import sandbox "github.com/sandboxd/sandboxd/sdk/go"
//
// # Running code
//
// [Client.Execute] runs a program and waits for its verdict. [Client.Submit] queues it and returns
// its execution id at once; [Client.Wait], [Client.GetExecution] and [Client.Events] (live output)
// follow it, and [Client.Cancel] stops it.
//
// # Errors
//
// Three kinds, told apart with errors.As:
//
//   - *[Error]: the request was accepted and the program ran (or was meant to) but did not
//     succeed: a compile error, a runtime error, a timeout, an out-of-memory kill, a resource
//     limit, an input file that could not be fetched, a cancellation, or sandboxd's own internal
//     failure. Its Type says which, and its Result is the whole execution record. Execute and Wait
//     return the Result and the *Error together.
//   - *[APIError]: sandboxd refused the request (an HTTP status of 400 and above, with the code,
//     field and message of the API's error body).
//   - anything else is a transport error: the connection failed, the context was cancelled or its
//     deadline passed (errors.Is(err, context.Canceled) / context.DeadlineExceeded), or the answer
//     could not be read.
//
// # Retries and idempotency
//
// Execute and Submit give every request an execution_id when the caller did not, so a request
// retried after a lost connection names the same execution: sandboxd answers with the existing
// execution instead of running the program twice. GETs, Cancel and those POSTs are retried after
// a transport error, and every request after a 503 or a transient 429 (queue_full,
// caller_queue_full, too_many_callbacks, or a refused connection), with exponential backoff and
// jitter, at most Config.MaxRetries times. No other 4xx or 5xx is retried.
//
// # Contexts
//
// Every call takes a context. Cancelling it (or its deadline passing) abandons the call: the SDK
// stops waiting and returns the context's error at once. It does NOT stop the execution on the
// server, which runs on to its verdict; only [Client.Cancel] does that.
package sandbox
