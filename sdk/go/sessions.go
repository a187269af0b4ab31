// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// A session is created by the first Execute or Submit with a new ExecuteRequest.SessionID; its
// /workspace persists from run to run until it is idle for SessionIdleSec= or deleted.

func sessPath(id string) string { return "/v1/sessions/" + url.PathEscape(id) }

// GetSession returns a session's record (GET /v1/sessions/{id}).
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.doJSON(ctx, &call{method: "GET", path: sessPath(id), retryTransport: true}, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ListSessions returns the caller's sessions (GET /v1/sessions), without RecentExecutions.
func (c *Client) ListSessions(ctx context.Context) ([]Session, error) {
	var r struct {
		Sessions []Session `json:"sessions"`
	}
	if err := c.doJSON(ctx, &call{method: "GET", path: "/v1/sessions", retryTransport: true}, &r); err != nil {
		return nil, err
	}
	return r.Sessions, nil
}

// DeleteSession removes a session and its files now (DELETE /v1/sessions/{id}). While a run of
// it is queued or running the answer is an *APIError 409; an unknown session is a 404. It is not
// resent after a transport error (a resent DELETE that had succeeded would answer 404).
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.doJSON(ctx, &call{method: "DELETE", path: sessPath(id)}, nil)
}

// ListSessionFiles lists a directory of the session's /workspace (dir "" is /workspace itself).
func (c *Client) ListSessionFiles(ctx context.Context, id, dir string) (*DirListing, error) {
	p := sessPath(id) + "/files/"
	if d := strings.Trim(dir, "/"); d != "" {
		p += escapePath(d) + "/"
	}
	var l DirListing
	if err := c.doJSON(ctx, &call{method: "GET", path: p, retryTransport: true}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// GetSessionFile streams the file at path (relative to /workspace) of the session into w and
// returns the number of bytes written. While a run of the session is queued or running the answer
// is an *APIError 409.
func (c *Client) GetSessionFile(ctx context.Context, id, path string, w io.Writer) (int64, error) {
	return c.stream(ctx, &call{method: "GET", path: sessPath(id) + "/files/" + escapePath(path),
		retryTransport: true}, w)
}

// PutSessionFile creates or replaces the file at path (relative to /workspace; its directory must
// exist) of the session with the bytes of r, streamed, and returns the size sandboxd wrote.
// size is r's length, or -1 if unknown (the body is then sent chunked). The upload is resent
// after a failure only when r is an io.Seeker.
func (c *Client) PutSessionFile(ctx context.Context, id, path string, r io.Reader, size int64) (int64, error) {
	p := sessPath(id) + "/files/" + escapePath(path)
	seeker, canRetry := r.(io.Seeker)
	var start int64
	if canRetry {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			canRetry = false
		}
	}
	var out struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	}
	attempts := c.maxRetries
	if !canRetry {
		attempts = 0
	}
	var err error
	for i := 0; ; i++ {
		if i > 0 {
			if _, e := seeker.Seek(start, io.SeekStart); e != nil {
				return 0, fmt.Errorf("sandbox: PUT %s: rewinding the body: %w", p, e)
			}
		}
		err = c.putOnce(ctx, p, r, size, &out)
		if err == nil {
			return out.Size, nil
		}
		retry := ctx.Err() == nil
		if ae, ok := err.(*APIError); ok {
			retry = ae.retryable()
		}
		if !retry || i >= attempts {
			return 0, err
		}
		if e := sleepCtx(ctx, c.backoff(i, nil)); e != nil {
			return 0, err
		}
	}
}

func (c *Client) putOnce(ctx context.Context, p string, r io.Reader, size int64, out interface{}) error {
	resp, err := c.doBody(ctx, "PUT", p, r, size)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return decodeBody(resp, "PUT", p, out)
}

// DeleteSessionFile removes a file, a symlink or an empty directory of the session's workspace.
func (c *Client) DeleteSessionFile(ctx context.Context, id, path string) error {
	return c.doJSON(ctx, &call{method: "DELETE", path: sessPath(id) + "/files/" + escapePath(path)}, nil)
}
