// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Event is one Server-Sent Event of GET /v1/executions/{id}/events.
type Event struct {
	ID   string          // "STAGE.OUT.ERR": the position after this event
	Type string          // status, stdout, stderr, elided or result
	Data json.RawMessage // the event's JSON data, as sent

	Status Status  // "status" events: queued or running
	Text   string  // "stdout" and "stderr" events: a chunk of output, as written
	Stream string  // "elided" events: "stdout" or "stderr"
	Bytes  int64   // "elided" events: how many bytes of Stream this reader does not get as text
	Result *Result // the "result" event (the last): the final execution record
}

// EventStream reads an execution's live events. Next returns them in order and io.EOF after
// the result event. A connection lost before the result is made again with Last-Event-ID, so no
// event is repeated or lost (what the server no longer holds comes as an "elided" event). Close
// it when done, also when stopping early.
type EventStream struct {
	c      *Client
	ctx    context.Context
	id     string
	r      *bufio.Reader
	lastID string

	mu   sync.Mutex // resp and done: Close may come from another goroutine
	resp *http.Response
	done bool
}

// Events opens the live output of an execution (GET /v1/executions/{id}/events): its statuses,
// its stdout and stderr as written, and its final record. Cancelling ctx ends the stream (not the
// execution). Config.Timeout does not apply.
func (c *Client) Events(ctx context.Context, id string) (*EventStream, error) {
	if id == "" {
		return nil, errNoID
	}
	s := &EventStream{c: c, ctx: ctx, id: id}
	if err := s.connect(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *EventStream) connect() error {
	h := http.Header{"Accept": {"text/event-stream"}}
	if s.lastID != "" {
		h.Set("Last-Event-ID", s.lastID)
	}
	resp, err := s.c.do(s.ctx, &call{method: "GET", path: execPath(s.id) + "/events", retryTransport: true, header: h})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done { // closed meanwhile
		resp.Body.Close()
		return io.EOF
	}
	s.resp = resp
	s.r = bufio.NewReaderSize(resp.Body, 64<<10)
	return nil
}

// Close ends the stream. It may be called from another goroutine to end a Next that waits.
func (s *EventStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.resp != nil {
		err := s.resp.Body.Close()
		s.resp = nil
		return err
	}
	return nil
}

func (s *EventStream) current() (*http.Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.resp, s.done
}

func (s *EventStream) drop(resp *http.Response) {
	resp.Body.Close()
	s.mu.Lock()
	if s.resp == resp {
		s.resp = nil
	}
	s.mu.Unlock()
}

// LastEventID returns the id of the last event read ("" before the first).
func (s *EventStream) LastEventID() string { return s.lastID }

// Next returns the next event; io.EOF once the result event has been returned.
func (s *EventStream) Next() (*Event, error) {
	failures := 0
	for {
		resp, done := s.current()
		if done {
			return nil, io.EOF
		}
		if resp == nil {
			if err := s.connect(); err != nil {
				return nil, err
			}
			resp, _ = s.current()
			if resp == nil {
				return nil, io.EOF
			}
		}
		ev, err := readEvent(s.r)
		if err == nil {
			if ev.ID != "" {
				s.lastID = ev.ID
			}
			if err := ev.decode(); err != nil {
				return nil, err
			}
			if ev.Type == "result" {
				s.Close()
			}
			return ev, nil
		}
		// The connection ended before the result: make it again from the last id.
		s.drop(resp)
		if _, done := s.current(); done {
			return nil, io.EOF
		}
		if s.ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox: events of %s: %w", s.id, s.ctx.Err())
		}
		if strings.HasPrefix(s.lastID, "3.") {
			s.Close()
			return nil, io.EOF
		}
		failures++
		if failures > s.c.maxRetries {
			return nil, fmt.Errorf("sandbox: events of %s: %w", s.id, err)
		}
		if e := sleepCtx(s.ctx, s.c.backoff(failures-1, nil)); e != nil {
			return nil, fmt.Errorf("sandbox: events of %s: %w", s.id, e)
		}
	}
}

// readEvent reads lines up to the empty line that ends an event, skipping comments
// (": keepalive") and events without data. io.ErrUnexpectedEOF when the stream ends first.
func readEvent(r *bufio.Reader) (*Event, error) {
	ev := &Event{}
	var data []string
	hasData := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if hasData {
				if ev.Type == "" {
					ev.Type = "message"
				}
				ev.Data = json.RawMessage(strings.Join(data, "\n"))
				return ev, nil
			}
			ev = &Event{} // a block of comments only
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, ""
		if i := strings.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], strings.TrimPrefix(line[i+1:], " ")
		}
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Type = value
		case "data":
			data = append(data, value)
			hasData = true
		}
	}
}

func (ev *Event) decode() error {
	var err error
	switch ev.Type {
	case "status":
		var d struct {
			Status Status `json:"status"`
		}
		err = json.Unmarshal(ev.Data, &d)
		ev.Status = d.Status
	case "stdout", "stderr":
		var d struct {
			Text string `json:"text"`
		}
		err = json.Unmarshal(ev.Data, &d)
		ev.Text = d.Text
	case "elided":
		var d struct {
			Stream string `json:"stream"`
			Bytes  int64  `json:"bytes"`
		}
		err = json.Unmarshal(ev.Data, &d)
		ev.Stream, ev.Bytes = d.Stream, d.Bytes
	case "result":
		var r Result
		err = json.Unmarshal(ev.Data, &r)
		ev.Result = &r
	}
	if err != nil {
		return fmt.Errorf("sandbox: event %s %q: %w", ev.Type, ev.ID, err)
	}
	return nil
}

// StreamOutput copies an execution's live output into stdout and stderr (either may be nil) as
// the program writes it, and returns the final Result as Wait does (with an *Error when the
// program did not succeed).
func (c *Client) StreamOutput(ctx context.Context, id string, stdout, stderr io.Writer) (*Result, error) {
	s, err := c.Events(ctx, id)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("sandbox: events of %s ended without a result", id)
			}
			return nil, err
		}
		var w io.Writer
		switch ev.Type {
		case "stdout":
			w = stdout
		case "stderr":
			w = stderr
		case "result":
			return ev.Result, ev.Result.Err()
		}
		if w != nil {
			if _, err := io.WriteString(w, ev.Text); err != nil {
				return nil, err
			}
		}
	}
}
