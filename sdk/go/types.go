// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"time"
)

// Limits are an execution's resource limits (the request's "limits"). A zero field is left out of
// the request, and sandboxd uses its configured default; a value above the server's ceiling is
// refused with a 400 *APIError naming the field, never clamped.
type Limits struct {
	TimeoutMS int64   `json:"timeout_ms,omitempty"` // wall-clock limit, ≥ 100; a hard kill of the whole unit
	MemoryMB  int64   `json:"memory_mb,omitempty"`  // memory limit, ≥ 16, no swap
	CPUCores  float64 `json:"cpu_cores,omitempty"`  // CPU share, ≥ 0.01 (0.5 is half a core)
	DiskMB    int64   `json:"disk_mb,omitempty"`    // everything the run may write (/workspace, /tmp), ≥ 1
	Tasks     int64   `json:"tasks,omitempty"`      // processes and threads, ≥ 4
}

// File is an input file, put into /workspace/input/<Path> before the program starts. Exactly one
// of ContentBase64 and URL is set; [InlineFile] makes the first from bytes.
type File struct {
	Path          string `json:"path"`
	ContentBase64 string `json:"content_base64,omitempty"`
	URL           string `json:"url,omitempty"` // http:// or https://, downloaded by sandboxd
}

// InlineFile returns an input file at path with content sent inline (base64) in the request.
func InlineFile(path string, content []byte) File {
	return File{Path: path, ContentBase64: base64.StdEncoding.EncodeToString(content)}
}

// Network gives an execution network access through its egress proxy, to the hosts of Allow only
// ("pypi.org", "*.pythonhosted.org", "api.github.com:443"). Without it a run has no network.
type Network struct {
	Allow []string `json:"allow"`
}

// ExecuteRequest is the body of POST /v1/executions. Language and Code are required.
type ExecuteRequest struct {
	// ExecutionID is the caller's idempotency key ([A-Za-z0-9_.-]{1,64}): the same id submitted
	// again returns the existing execution, never a second run (a different request with the same
	// id is a 409). When empty, Execute and Submit choose a random one, so that their retries are
	// safe; the id sent is the Result's ExecutionID.
	ExecutionID string `json:"execution_id,omitempty"`
	// SessionID runs the program in this session: its /workspace and /tmp persist from run to
	// run. The first request with a new id creates the session.
	SessionID   string            `json:"session_id,omitempty"`
	Language    string            `json:"language"`
	Code        string            `json:"code"`
	Limits      *Limits           `json:"limits,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Stdin       string            `json:"stdin,omitempty"` // the program's standard input, byte for byte
	Args        []string          `json:"args,omitempty"`  // argv after the program itself
	Seed        int64             `json:"seed,omitempty"`  // SANDBOX_SEED (default 0)
	Files       []File            `json:"files,omitempty"`
	Network     *Network          `json:"network,omitempty"`
	Environment string            `json:"environment,omitempty"` // e.g. "python-data"; empty: the language's base
	Start       string            `json:"start,omitempty"`       // "auto" (default) or "cold"
	// Isolation: "strong" runs the program under gVisor whatever the daemon's risk scan says;
	// "" or "auto": the tier the daemon's policy chooses (Result.Isolation says which, and why).
	Isolation string `json:"isolation,omitempty"`
	// Retry: with several nodes, run it once more on another node should the node running it be
	// lost (Result.Attempt 2); false: it ends StatusOrphaned. Only for runs that may run twice.
	Retry bool `json:"retry,omitempty"`
	// CallbackURL: when the execution ends, sandboxd POSTs its result there, signed (see
	// docs/http-api.md, Callbacks).
	CallbackURL string `json:"callback_url,omitempty"`
}

// Status is an execution's status.
type Status string

// The statuses of an execution. Success, Failed and Cancelled are final.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSuccess   Status = "success"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	// StatusOrphaned: the node running it was lost (several nodes) and it did not ask to Retry.
	StatusOrphaned Status = "orphaned"
)

// Final reports whether the status is a verdict (success, failed, cancelled or orphaned).
func (s Status) Final() bool {
	return s == StatusSuccess || s == StatusFailed || s == StatusCancelled || s == StatusOrphaned
}

// Artifact is a file the program left below /workspace/output, collected after the run.
type Artifact struct {
	Path         string    `json:"path"`
	Size         int64     `json:"size"`
	MimeType     string    `json:"mime_type"`
	SHA256       string    `json:"sha256"`
	URL          string    `json:"url"` // signed, relative to the API; see Client.DownloadArtifact
	URLExpiresAt time.Time `json:"url_expires_at"`
}

// SkippedArtifact is a file of /workspace/output that was not collected, and why.
type SkippedArtifact struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Callback is the state of a result's delivery to the request's callback_url.
type Callback struct {
	URL           string    `json:"url"`
	DeliveryID    string    `json:"delivery_id"`
	State         string    `json:"state"` // pending, delivered or failed
	Attempts      int       `json:"attempts"`
	LastError     string    `json:"last_error"`
	DeliveredAt   time.Time `json:"delivered_at"`
	NextAttemptAt time.Time `json:"next_attempt_at"`
}

// Result is the execution object (GET /v1/executions/{id}). Fields not known yet (while queued or
// running) are zero; times that are null are the zero time.
type Result struct {
	ExecutionID string    `json:"execution_id"`
	RecordID    string    `json:"record_id"`
	SessionID   string    `json:"session_id"`
	Language    string    `json:"language"`
	Status      Status    `json:"status"`
	ErrorType   ErrorType `json:"error_type"` // "" on success and for cancelled executions
	// ExitCode is the program's exit status, nil if it was killed or never ran.
	ExitCode              *int              `json:"exit_code"`
	Signal                int               `json:"signal"` // the signal that killed it, 0 if none
	Stdout                string            `json:"stdout"`
	Stderr                string            `json:"stderr"`
	StdoutBytes           int64             `json:"stdout_bytes"`
	StdoutLines           int64             `json:"stdout_lines"`
	StdoutTruncated       bool              `json:"stdout_truncated"`
	StderrBytes           int64             `json:"stderr_bytes"`
	StderrLines           int64             `json:"stderr_lines"`
	StderrTruncated       bool              `json:"stderr_truncated"`
	DurationMS            int64             `json:"duration_ms"`
	CPUTimeMS             int64             `json:"cpu_time_ms"`
	PeakMemoryMB          float64           `json:"peak_memory_mb"`
	CreatedAt             time.Time         `json:"created_at"`
	StartedAt             time.Time         `json:"started_at"`
	FinishedAt            time.Time         `json:"finished_at"`
	Limits                Limits            `json:"limits"`
	Unit                  string            `json:"unit"`
	Node                  string            `json:"node"`    // the node that holds it (several nodes)
	Attempt               int               `json:"attempt"` // 2 once it ran again after its node was lost
	Start                 string            `json:"start"`   // "warm" or "cold"
	Reason                string            `json:"reason"`
	ErrorMessage          string            `json:"error_message"`
	Environment           string            `json:"environment"`
	Isolation             *Isolation        `json:"isolation"` // nil for records stored before the tiers
	Args                  []string          `json:"args"`
	StdinBytes            int64             `json:"stdin_bytes"`
	Artifacts             []Artifact        `json:"artifacts"`
	ArtifactsSkipped      []SkippedArtifact `json:"artifacts_skipped"`
	ArtifactsSkippedTotal int               `json:"artifacts_skipped_total"`
	// Network is the run's network log (allow list, connections), raw; null without network.
	Network  json.RawMessage `json:"network"`
	Summary  string          `json:"summary"` // what happened, as text for a model or a person
	Callback *Callback       `json:"callback"`
}

// Isolation is the tier an execution ran in: "standard", or "strong" (gVisor), with the reasons
// for the strong one ("caller", "policy: always", "timeout: ...", "processes: subprocess", ...).
type Isolation struct {
	Tier    string   `json:"tier"`
	Reasons []string `json:"reasons"`
}

// Err returns nil when the execution succeeded or is not final yet, else an *Error carrying r.
func (r *Result) Err() error {
	if r == nil {
		return nil
	}
	switch r.Status {
	case StatusFailed:
		t := r.ErrorType
		if t == "" {
			t = ErrUnknown
		}
		return &Error{Type: t, Result: r}
	case StatusCancelled:
		return &Error{Type: ErrCancelled, Result: r}
	case StatusOrphaned:
		return &Error{Type: ErrOrphaned, Result: r}
	}
	return nil
}

// ExecutionList is one page of GET /v1/executions. Its executions carry no stdout, stderr or
// artifacts (their counts are there): GetExecution one for those.
type ExecutionList struct {
	Executions []Result `json:"executions"`
	NextCursor string   `json:"next_cursor"` // "" on the last page
}

// ListFilter selects executions for ListExecutions; zero fields do not filter.
type ListFilter struct {
	SessionID string
	Status    Status
	ErrorType ErrorType // or "none"
	Failed    bool      // only status=failed
	Order     string    // "created_at" (newest first, the default) or "duration_ms" (slowest first)
	Limit     int       // 1..1000, default 50
	Cursor    string    // the NextCursor of the previous page
}

// Session is a session's record (GET /v1/sessions/{id}).
type Session struct {
	SessionID        string    `json:"session_id"`
	RecordID         string    `json:"record_id"`
	DiskMB           int64     `json:"disk_mb"`
	SizeBytes        int64     `json:"size_bytes"`
	CreatedAt        time.Time `json:"created_at"`
	LastUsedAt       time.Time `json:"last_used_at"`
	ExpiresAt        time.Time `json:"expires_at"`
	Executions       int64     `json:"executions"`
	Active           string    `json:"active"`
	Pending          int64     `json:"pending"`
	RecentExecutions []string  `json:"recent_executions"`
}

// DirEntry is one entry of a session directory listing.
type DirEntry struct {
	Name string `json:"name"`
	Type string `json:"type"` // file, directory, symlink or other
	Size int64  `json:"size"`
}

// DirListing is a directory of a session's workspace.
type DirListing struct {
	Path      string     `json:"path"`
	Entries   []DirEntry `json:"entries"`
	Truncated bool       `json:"truncated"`
}

// Package is a package of an environment.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Environment is a layer of libraries for one language (e.g. python-data).
type Environment struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Packages    []Package `json:"packages"`
}

// Language is an entry of GET /v1/languages.
type Language struct {
	Name         string        `json:"name"`
	Aliases      []string      `json:"aliases"`
	Source       string        `json:"source"`
	Compiled     bool          `json:"compiled"`
	Version      string        `json:"version"`
	Available    bool          `json:"available"`
	Reason       string        `json:"reason"`
	Environments []Environment `json:"environments"`
}

// Health is GET /v1/health. Pool is kept raw (its shape is informational).
type Health struct {
	Status   string          `json:"status"` // "ok", or "stopping"
	Version  string          `json:"version"`
	Running  int             `json:"running"`
	Queued   int             `json:"queued"`
	Slots    int             `json:"slots"`
	QueueMax int             `json:"queue_max"`
	Finished int64           `json:"finished"`
	Cgroup   string          `json:"cgroup"`
	Pool     json.RawMessage `json:"pool"`
}
