// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"fmt"
	"strconv"
)

// ErrorType says why an execution did not succeed: the execution object's error_type, or
// ErrCancelled for a cancelled one.
type ErrorType string

// The error types. Compile and runtime errors are the program's; timeout, OOM and resource limit
// are its limits (raise them or change the program); input errors are its input files;
// internal errors are sandboxd's own (not the program's fault: retrying may help).
const (
	ErrCompile       ErrorType = "compile_error"
	ErrRuntime       ErrorType = "runtime_error"
	ErrTimeout       ErrorType = "timeout"
	ErrOOM           ErrorType = "oom"
	ErrResourceLimit ErrorType = "resource_limit"
	ErrInternal      ErrorType = "internal_error"
	ErrInput         ErrorType = "input_error"
	// ErrCancelled: the execution was cancelled (Client.Cancel) before it finished.
	ErrCancelled ErrorType = "cancelled"
	// ErrOrphaned: the node running it was lost before it finished (several nodes); what it did
	// is unknown. Request.Retry asks for a second attempt on another node instead.
	ErrOrphaned ErrorType = "orphaned"
	// ErrUnknown: a failed execution without an error type (not made by this sandboxd).
	ErrUnknown ErrorType = "unknown"
)

// Error is an execution that did not succeed. Result is the whole execution record (output,
// exit code, reason, summary). Reach it with errors.As, through any wrapping:
//
//	var sbErr *sandbox.Error
//	if errors.As(err, &sbErr) {
//		switch sbErr.Type {
//		case sandbox.ErrTimeout: ...
//		}
//	}
type Error struct {
	Type   ErrorType
	Result *Result
}

func (e *Error) Error() string {
	id, reason := "", ""
	if e.Result != nil {
		id, reason = e.Result.ExecutionID, e.Result.Reason
		if e.Result.ErrorMessage != "" {
			reason += ": " + e.Result.ErrorMessage
		}
	}
	if reason == "" {
		return fmt.Sprintf("sandbox: execution %s: %s", id, e.Type)
	}
	return fmt.Sprintf("sandbox: execution %s: %s (%s)", id, e.Type, reason)
}

// APIError is a request sandboxd refused: an HTTP status of 400 or more with the API's error
// body {"error": {"code", "message", "field"}}. Code is e.g. "invalid_request", "not_found",
// "conflict", "queue_full"; Field names the request member at fault when there is one.
type APIError struct {
	StatusCode int
	Code       string
	Message    string
	Field      string
	// RetryAfter is the Retry-After header in seconds, 0 if none.
	RetryAfter int
}

func (e *APIError) Error() string {
	s := "sandbox: HTTP " + strconv.Itoa(e.StatusCode)
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Field != "" {
		s += " (" + e.Field + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// retryable reports whether a refusal says nothing was done and a later attempt may succeed.
func (e *APIError) retryable() bool {
	switch e.StatusCode {
	case 503:
		return true
	case 429:
		switch e.Code {
		case "queue_full", "caller_queue_full", "too_many_callbacks", "":
			return true
		}
	}
	return false
}
