// SPDX-License-Identifier: LGPL-2.1-or-later

package sandbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultEndpoint is sandboxd's unix socket.
const DefaultEndpoint = "unix:///run/sandboxd/api.sock"

// Config configures a Client. Every field is optional.
type Config struct {
	// Endpoint is "unix:///path/to/api.sock" (DefaultEndpoint when empty) or "http://host:port"
	// / "https://host:port" (a TCP listener, or a TLS proxy in front of one).
	Endpoint string
	// APIKey is sent as "Authorization: Bearer APIKey" (TCP listeners require one; the unix
	// socket needs none).
	APIKey string
	// Timeout bounds each call that answers with a JSON document (Execute included, retries and
	// the wait for the verdict included): set it above the run's timeout_ms. Zero: no bound but
	// the context's. It does not apply to streams (Events, DownloadArtifact, GetSessionFile,
	// PutSessionFile), which the context bounds.
	Timeout time.Duration
	// MaxRetries is how many times a call is retried when that is safe (see the package
	// documentation). Zero means the default, 3; a negative value disables retries.
	MaxRetries int
	// RetryBaseDelay is the first backoff delay (default 200ms); each retry doubles it, up to 5 s,
	// and each delay is drawn at random between half and all of it (jitter), so that clients
	// refused together do not come back together. A Retry-After header of the answer is honoured
	// up to 30 s.
	RetryBaseDelay time.Duration
	// HTTPClient is the client used for requests. When nil, the SDK makes one whose transport
	// keeps up to 20 idle connections per host (MaxIdleConnsPerHost=20). With a unix Endpoint and
	// an *http.Transport, the SDK uses a clone of that transport that dials the socket.
	HTTPClient *http.Client
}

// Client is a sandboxd client. It is safe for concurrent use; make one and share it.
type Client struct {
	base       *url.URL // scheme://host of every request
	apiKey     string
	timeout    time.Duration
	maxRetries int
	baseDelay  time.Duration
	hc         *http.Client
	cfgErr     error

	rngMu sync.Mutex
	rng   *mrand.Rand
}

const defaultMaxRetries = 3

// NewClient returns a client for cfg. An Endpoint that does not parse is reported by every call
// of the client (and by Client.ConfigError).
func NewClient(cfg Config) *Client {
	c := &Client{
		apiKey:     cfg.APIKey,
		timeout:    cfg.Timeout,
		maxRetries: cfg.MaxRetries,
		baseDelay:  cfg.RetryBaseDelay,
		rng:        mrand.New(mrand.NewSource(time.Now().UnixNano())),
	}
	if c.maxRetries == 0 {
		c.maxRetries = defaultMaxRetries
	} else if c.maxRetries < 0 {
		c.maxRetries = 0
	}
	if c.baseDelay <= 0 {
		c.baseDelay = 200 * time.Millisecond
	}
	socket, base, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		c.cfgErr = err
		c.base = &url.URL{Scheme: "http", Host: "invalid"}
		c.hc = http.DefaultClient
		return c
	}
	c.base = base
	c.hc = cfg.HTTPClient
	if socket != "" {
		dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}
		if c.hc == nil {
			t := newTransport()
			t.DialContext = dial
			c.hc = &http.Client{Transport: t}
		} else if t, ok := c.hc.Transport.(*http.Transport); ok {
			t = t.Clone()
			t.DialContext = dial
			hc := *c.hc
			hc.Transport = t
			c.hc = &hc
		} else if c.hc.Transport == nil {
			t := newTransport()
			t.DialContext = dial
			hc := *c.hc
			hc.Transport = t
			c.hc = &hc
		}
	} else if c.hc == nil {
		c.hc = &http.Client{Transport: newTransport()}
	}
	return c
}

// ConfigError returns the error of an Endpoint that did not parse, else nil.
func (c *Client) ConfigError() error { return c.cfgErr }

func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
	}
}

// parseEndpoint returns the socket path (for unix://) and the base URL of requests.
func parseEndpoint(ep string) (socket string, base *url.URL, err error) {
	if ep == "" {
		ep = DefaultEndpoint
	}
	if strings.HasPrefix(ep, "/") {
		ep = "unix://" + ep
	}
	u, err := url.Parse(ep)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: endpoint %q: %w", ep, err)
	}
	switch u.Scheme {
	case "unix":
		p := u.Path
		if u.Host != "" || !strings.HasPrefix(p, "/") {
			return "", nil, fmt.Errorf("sandbox: endpoint %q: want unix:///absolute/path", ep)
		}
		// The host is not looked at: every request goes to the socket.
		return p, &url.URL{Scheme: "http", Host: "sandboxd"}, nil
	case "http", "https":
		if u.Host == "" {
			return "", nil, fmt.Errorf("sandbox: endpoint %q: no host", ep)
		}
		return "", &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimRight(u.Path, "/")}, nil
	}
	return "", nil, fmt.Errorf("sandbox: endpoint %q: the scheme must be unix, http or https", ep)
}

// newExecutionID returns a random id of the API's syntax [A-Za-z0-9_.-]{1,64}.
func newExecutionID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("sandbox: crypto/rand: " + err.Error())
	}
	return "go_" + hex.EncodeToString(b[:])
}

// escapePath percent-encodes each component of a slash-separated path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// call is one API request.
type call struct {
	method string
	path   string // escaped, with the query
	body   []byte // sent as JSON when non-nil (or when jsonBody)
	json   bool   // Content-Type: application/json
	// retryTransport: the request may be sent again after a transport error (it is idempotent).
	retryTransport bool
	header         http.Header
}

// backoff returns the delay before retry number n (0-based).
func (c *Client) backoff(n int, apiErr *APIError) time.Duration {
	max := 5 * time.Second
	d := c.baseDelay << uint(n)
	if d > max || d <= 0 {
		d = max
	}
	c.rngMu.Lock()
	j := time.Duration(c.rng.Int63n(int64(d)/2 + 1))
	c.rngMu.Unlock()
	d = d/2 + j // between half and all of it
	if apiErr != nil && apiErr.RetryAfter > 0 {
		ra := time.Duration(apiErr.RetryAfter) * time.Second
		if ra > 30*time.Second {
			ra = 30 * time.Second
		}
		if ra > d {
			d = ra
		}
	}
	return d
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// do sends the call, retrying where safe, and returns a response with a status below 400 (whose
// body the caller closes), or an *APIError, or a transport error.
func (c *Client) do(ctx context.Context, cl *call) (*http.Response, error) {
	if c.cfgErr != nil {
		return nil, c.cfgErr
	}
	for attempt := 0; ; attempt++ {
		resp, err := c.once(ctx, cl)
		if err == nil && resp.StatusCode < 400 {
			return resp, nil
		}
		var apiErr *APIError
		retry := false
		if err == nil {
			apiErr = readAPIError(resp)
			err = apiErr
			retry = apiErr.retryable()
		} else if ctx.Err() != nil {
			return nil, fmt.Errorf("sandbox: %s %s: %w", cl.method, cl.path, ctx.Err())
		} else {
			retry = cl.retryTransport
			err = fmt.Errorf("sandbox: %s %s: %w", cl.method, cl.path, err)
		}
		if !retry || attempt >= c.maxRetries {
			return nil, err
		}
		if e := sleepCtx(ctx, c.backoff(attempt, apiErr)); e != nil {
			return nil, fmt.Errorf("sandbox: %s %s: %w (after: %v)", cl.method, cl.path, e, err)
		}
	}
}

func (c *Client) once(ctx context.Context, cl *call) (*http.Response, error) {
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, c.base.String()+cl.path, body)
	if err != nil {
		return nil, err
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	c.authorize(req)
	if cl.json {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	return c.hc.Do(req)
}

func (c *Client) authorize(req *http.Request) {
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	req.Header.Set("User-Agent", "sandboxd-go-sdk/0.1")
}

// readAPIError reads and closes an error answer.
func readAPIError(resp *http.Response) *APIError {
	defer resp.Body.Close()
	e := &APIError{StatusCode: resp.StatusCode}
	if ra, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); err == nil && ra > 0 {
		e.RetryAfter = ra
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var body struct {
		Error struct {
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Field   *string `json:"field"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &body) == nil && body.Error.Code != "" {
		e.Code, e.Message = body.Error.Code, body.Error.Message
		if body.Error.Field != nil {
			e.Field = *body.Error.Field
		}
	} else {
		e.Message = strings.TrimSpace(string(data))
		if len(e.Message) > 512 {
			e.Message = e.Message[:512]
		}
	}
	return e
}

// withTimeout applies Config.Timeout.
func (c *Client) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return context.WithCancel(ctx)
}

// doJSON sends the call and decodes a JSON answer into out (when non-nil).
func (c *Client) doJSON(ctx context.Context, cl *call, out interface{}) error {
	ctx, cancel := c.withTimeout(ctx)
	defer cancel()
	resp, err := c.do(ctx, cl)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("sandbox: %s %s: reading the answer: %w", cl.method, cl.path, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("sandbox: %s %s: decoding the answer: %w", cl.method, cl.path, err)
	}
	return nil
}

func marshal(v interface{}) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

var errNoID = errors.New("sandbox: an execution id is required")

// doBody sends one request with a streamed body (no retry) and returns a response below 400, an
// *APIError or a transport error.
func (c *Client) doBody(ctx context.Context, method, p string, body io.Reader, size int64) (*http.Response, error) {
	if c.cfgErr != nil {
		return nil, c.cfgErr
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base.String()+p, body)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		req.ContentLength = size
		if size == 0 {
			req.Body = http.NoBody
		}
	} else {
		req.ContentLength = -1
	}
	c.authorize(req)
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("sandbox: %s %s: %w", method, p, err)
	}
	if resp.StatusCode >= 400 {
		return nil, readAPIError(resp)
	}
	return resp, nil
}

func decodeBody(resp *http.Response, method, p string, out interface{}) error {
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("sandbox: %s %s: reading the answer: %w", method, p, err)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("sandbox: %s %s: decoding the answer: %w", method, p, err)
		}
	}
	return nil
}
