// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// prepare fills in an execution id and encodes the request once, so that every attempt sends the
// same bytes under the same id.
func prepare(req *ExecuteRequest) ([]byte, error) {
	if req.ExecutionID == "" {
		req.ExecutionID = newExecutionID()
	}
	return marshal(req)
}

// Execute runs a program and waits for its verdict (POST /v1/executions?wait=true).
//
// When the program succeeded, err is nil. When it did not (status failed or cancelled), Execute
// returns the Result and an *Error with the same Result: errors.As(err, &sbErr) and sbErr.Type
// say why. A refused request is an *APIError (with a nil Result); anything else a transport error.
//
// When req.ExecutionID is empty, Execute chooses one (the Result's ExecutionID), so a retry after
// a lost connection returns the same execution rather than running it twice. Cancelling ctx
// abandons the wait and returns ctx's error, but the program runs on: use Cancel to stop it.
func (c *Client) Execute(ctx context.Context, req ExecuteRequest) (*Result, error) {
	body, err := prepare(&req)
	if err != nil {
		return nil, err
	}
	var r Result
	err = c.doJSON(ctx, &call{method: "POST", path: "/v1/executions?wait=true", body: body, json: true,
		retryTransport: true}, &r)
	if err != nil {
		return nil, err
	}
	return &r, r.Err()
}

// Submit queues a program and returns its execution id at once (POST /v1/executions, 202). Follow
// it with Wait, GetExecution or Events, or have the result POSTed to req.CallbackURL. The id is
// req.ExecutionID, or one Submit chose when it was empty; submitting the same id again returns the
// same execution (never a second run).
func (c *Client) Submit(ctx context.Context, req ExecuteRequest) (string, error) {
	body, err := prepare(&req)
	if err != nil {
		return "", err
	}
	var r struct {
		ExecutionID string `json:"execution_id"`
	}
	err = c.doJSON(ctx, &call{method: "POST", path: "/v1/executions", body: body, json: true,
		retryTransport: true}, &r)
	if err != nil {
		return "", err
	}
	if r.ExecutionID == "" {
		r.ExecutionID = req.ExecutionID
	}
	return r.ExecutionID, nil
}

func execPath(id string) string { return "/v1/executions/" + url.PathEscape(id) }

// GetExecution returns an execution's current record (GET /v1/executions/{id}), final or not. A
// program's failure is not an error here: look at Result.Status, or Result.Err().
func (c *Client) GetExecution(ctx context.Context, id string) (*Result, error) {
	if id == "" {
		return nil, errNoID
	}
	var r Result
	if err := c.doJSON(ctx, &call{method: "GET", path: execPath(id), retryTransport: true}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Wait waits until the execution is final (GET /v1/executions/{id}?wait=true) and returns it as
// Execute does: with an *Error when it did not succeed. Cancelling ctx abandons the wait only.
func (c *Client) Wait(ctx context.Context, id string) (*Result, error) {
	if id == "" {
		return nil, errNoID
	}
	var r Result
	if err := c.doJSON(ctx, &call{method: "GET", path: execPath(id) + "?wait=true", retryTransport: true}, &r); err != nil {
		return nil, err
	}
	return &r, r.Err()
}

// Cancel stops an execution (POST /v1/executions/{id}/cancel): sandboxd records the request and
// kills the program; the verdict becomes "cancelled" (Wait then returns an *Error of type
// ErrCancelled). It returns the record as it is when the cancel was accepted. Cancelling an
// execution that is already final is an *APIError with StatusCode 409.
func (c *Client) Cancel(ctx context.Context, id string) (*Result, error) {
	if id == "" {
		return nil, errNoID
	}
	var r Result
	if err := c.doJSON(ctx, &call{method: "POST", path: execPath(id) + "/cancel", json: true,
		retryTransport: true}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ListExecutions returns one page of the caller's executions (GET /v1/executions), newest first
// unless f.Order says otherwise. Pass the page's NextCursor as f.Cursor for the next page; it is
// "" on the last one. See also EachExecution.
func (c *Client) ListExecutions(ctx context.Context, f ListFilter) (*ExecutionList, error) {
	q := url.Values{}
	if f.SessionID != "" {
		q.Set("session_id", f.SessionID)
	}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.ErrorType != "" {
		q.Set("error_type", string(f.ErrorType))
	}
	if f.Failed {
		q.Set("failed", "true")
	}
	if f.Order != "" {
		q.Set("order", f.Order)
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	p := "/v1/executions"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var l ExecutionList
	if err := c.doJSON(ctx, &call{method: "GET", path: p, retryTransport: true}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// EachExecution calls fn for every execution f selects, page after page, until fn returns an
// error (which EachExecution returns) or the last page is done.
func (c *Client) EachExecution(ctx context.Context, f ListFilter, fn func(*Result) error) error {
	for {
		page, err := c.ListExecutions(ctx, f)
		if err != nil {
			return err
		}
		for i := range page.Executions {
			if err := fn(&page.Executions[i]); err != nil {
				return err
			}
		}
		if page.NextCursor == "" {
			return nil
		}
		f.Cursor = page.NextCursor
	}
}

// ArtifactList is GET /v1/executions/{id}/artifacts: Artifacts is nil until the execution is final.
type ArtifactList struct {
	ExecutionID           string            `json:"execution_id"`
	Status                Status            `json:"status"`
	Artifacts             []Artifact        `json:"artifacts"`
	ArtifactsSkipped      []SkippedArtifact `json:"artifacts_skipped"`
	ArtifactsSkippedTotal int               `json:"artifacts_skipped_total"`
}

// ListArtifacts returns an execution's artifacts with freshly signed URLs.
func (c *Client) ListArtifacts(ctx context.Context, id string) (*ArtifactList, error) {
	if id == "" {
		return nil, errNoID
	}
	var l ArtifactList
	if err := c.doJSON(ctx, &call{method: "GET", path: execPath(id) + "/artifacts", retryTransport: true}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// DownloadArtifact streams the artifact at path (as the execution lists it, relative to
// /workspace/output) of execution id into w, and returns the number of bytes written. It asks for
// a freshly signed URL first; the file is never held in memory. An artifact the execution does not
// have is an *APIError with StatusCode 404 and Code "not_found".
func (c *Client) DownloadArtifact(ctx context.Context, id, path string, w io.Writer) (int64, error) {
	l, err := c.ListArtifacts(ctx, id)
	if err != nil {
		return 0, err
	}
	for _, a := range l.Artifacts {
		if a.Path == path {
			return c.DownloadURL(ctx, a.URL, w)
		}
	}
	return 0, &APIError{StatusCode: 404, Code: "not_found", Field: "path",
		Message: fmt.Sprintf("execution %s has no artifact %q", id, path)}
}

// DownloadURL streams a signed artifact URL (Artifact.URL, relative to the API, or absolute) into
// w and returns the number of bytes written.
func (c *Client) DownloadURL(ctx context.Context, signedURL string, w io.Writer) (int64, error) {
	p := signedURL
	if i := strings.Index(p, "://"); i >= 0 { // absolute: keep its path and query
		u, err := url.Parse(p)
		if err != nil {
			return 0, fmt.Errorf("sandbox: artifact URL: %w", err)
		}
		p = u.RequestURI()
	}
	if c.base.Path != "" {
		p = strings.TrimPrefix(p, c.base.Path)
	}
	return c.stream(ctx, &call{method: "GET", path: p, retryTransport: true}, w)
}

// stream sends a GET and copies the answer's body into w.
func (c *Client) stream(ctx context.Context, cl *call, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, cl)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return n, fmt.Errorf("sandbox: %s %s: %w", cl.method, cl.path, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("sandbox: %s %s: got %d of %d bytes", cl.method, cl.path, n, resp.ContentLength)
	}
	return n, nil
}

// Languages lists the languages this server defines (GET /v1/languages).
func (c *Client) Languages(ctx context.Context) ([]Language, error) {
	var r struct {
		Languages []Language `json:"languages"`
	}
	if err := c.doJSON(ctx, &call{method: "GET", path: "/v1/languages", retryTransport: true}, &r); err != nil {
		return nil, err
	}
	return r.Languages, nil
}

// Health returns GET /v1/health.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.doJSON(ctx, &call{method: "GET", path: "/v1/health", retryTransport: true}, &h); err != nil {
		return nil, err
	}
	return &h, nil
}
