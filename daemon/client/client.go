// Package client is a typed Go client of kcd's REST API (Kafka Connect's API
// and /kcd/v1), used by kcctl and by tests.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kcd-project/kcd/api"
)

// maxBody bounds what the client reads of one response.
const maxBody = 32 << 20

// Client talks to one kcd (or Kafka Connect) REST endpoint, or to the
// first of several that answers.
type Client struct {
	bases []string
	cur   atomic.Int32 // index in bases of the one that answered last
	http  *http.Client
	creds Credentials
}

// Credentials authenticate the client: a bearer token, or a user name and
// password (HTTP basic). Zero: none.
type Credentials struct {
	Token    string
	User     string
	Password string
}

// Options tune a client; zero values take the defaults.
type Options struct {
	// Transport sends the requests (TLS settings, a node's own
	// authentication); nil: http.DefaultTransport.
	Transport http.RoundTripper
	// Credentials are sent with every request.
	Credentials Credentials
	// Timeout bounds each request, its answer read included; 0: 30s.
	Timeout time.Duration
	// Fallbacks are other base URLs of the same cluster, tried in turn
	// when a request gets no answer: any request when it could not even
	// connect, a read (GET, HEAD) whatever went wrong. A write that may
	// have reached a server is never sent twice.
	Fallbacks []string
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:8083).
func New(baseURL string) *Client { return NewWithOptions(baseURL, Options{}) }

// NewWithOptions returns a client of the API at baseURL with opts.
func NewWithOptions(baseURL string, opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	bases := []string{strings.TrimRight(baseURL, "/")}
	for _, f := range opts.Fallbacks {
		if f = strings.TrimRight(f, "/"); f != "" && !slices.Contains(bases, f) {
			bases = append(bases, f)
		}
	}
	return &Client{
		bases: bases,
		http:  &http.Client{Timeout: opts.Timeout, Transport: opts.Transport},
		creds: opts.Credentials,
	}
}

// authorize sets the request's credentials, if any.
func (c *Client) authorize(req *http.Request) {
	switch {
	case c.creds.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.creds.Token)
	case c.creds.User != "":
		req.SetBasicAuth(c.creds.User, c.creds.Password)
	}
}

// BaseURL is the URL the client talks to: the one that answered last.
func (c *Client) BaseURL() string { return c.bases[c.cur.Load()] }

// APIError is an error answer of the API, in Kafka Connect's error shape.
type APIError struct {
	Status    int
	ErrorCode int
	Message   string
	// Method and Path are the request's (Path without the base URL).
	Method, Path string
	// RetryAfter is the answer's Retry-After: the refusal is transient and
	// the same request may succeed after that long. 0 when the header is
	// absent, invalid or not in the future.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// maxRetryAfter bounds a Retry-After taken from an answer.
const maxRetryAfter = 24 * time.Hour

// retryAfter parses a Retry-After header (RFC 9110 10.2.3): delay
// seconds or an HTTP date, relative to now. 0 when h is empty, invalid or
// not in the future; at most maxRetryAfter.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	secs, err := strconv.ParseUint(h, 10, 64)
	switch {
	case err == nil && secs < uint64(maxRetryAfter/time.Second):
		return time.Duration(secs) * time.Second
	case err == nil || errors.Is(err, strconv.ErrRange):
		return maxRetryAfter
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(min(t.Sub(now), maxRetryAfter), 0)
	}
	return 0
}

// UnreachableError says that no answer came from the server at all.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("couldn't connect to the kcd REST API at %s: %v", e.URL, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// do sends a request without a body and decodes a JSON answer into out
// (when not nil).
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	return c.send(ctx, method, path, nil, out)
}

// send sends body (nil: none) and decodes a JSON answer into out.
func (c *Client) send(ctx context.Context, method, path string, body []byte, out any) error {
	return c.sendAs(ctx, method, path, body, "application/json", out)
}

// sendAs sends body (nil: none) of media type ct and decodes a JSON
// answer into out.
func (c *Client) sendAs(ctx context.Context, method, path string, body []byte, ct string, out any) error {
	res, err := c.roundTrip(ctx, method, path, body, ct)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	resBody, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return fmt.Errorf("read response of %s %s: %w", method, path, err)
	}
	if res.StatusCode >= 400 {
		var em api.ErrorMessage
		if json.Unmarshal(resBody, &em) != nil || em.Message == "" {
			em.Message = strings.TrimSpace(string(resBody))
			if em.Message == "" {
				em.Message = http.StatusText(res.StatusCode)
			}
		}
		return &APIError{Status: res.StatusCode, ErrorCode: em.ErrorCode, Message: em.Message, Method: method, Path: path,
			RetryAfter: retryAfter(res.Header.Get("Retry-After"), time.Now())}
	}
	if out == nil || len(resBody) == 0 {
		return nil
	}
	if err := json.Unmarshal(resBody, out); err != nil {
		return fmt.Errorf("decode response of %s %s: %w", method, path, err)
	}
	return nil
}

// roundTrip sends the request to the base URL that answered last, and on
// to the next ones while retrying is safe (see Options.Fallbacks).
func (c *Client) roundTrip(ctx context.Context, method, path string, body []byte, ct string) (*http.Response, error) {
	first := int(c.cur.Load())
	var errs []error
	for i := range c.bases {
		n := (first + i) % len(c.bases)
		base := c.bases[n]
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
		if err != nil {
			return nil, fmt.Errorf("build request %s %s: %w", method, path, err)
		}
		req.Header.Set("Accept", "application/json")
		c.authorize(req)
		if body != nil {
			req.Header.Set("Content-Type", ct)
		}
		res, err := c.http.Do(req)
		if err == nil {
			if n != first {
				c.cur.Store(int32(n))
			}
			return res, nil
		}
		errs = append(errs, &UnreachableError{URL: base, Err: err})
		if ctx.Err() != nil || !(notSent(err) || method == http.MethodGet || method == http.MethodHead) {
			break
		}
	}
	if len(errs) == 1 {
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// notSent tells whether a request failed before any of it left: the
// connection was never made.
func notSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// ServerInfo is GET /.
func (c *Client) ServerInfo(ctx context.Context) (api.ServerInfo, error) {
	var v api.ServerInfo
	return v, c.do(ctx, http.MethodGet, "/", &v)
}

// Health is GET /health. A node that is still starting answers 503 with a
// WorkerStatus body; that is returned without an error.
func (c *Client) Health(ctx context.Context) (api.WorkerStatus, error) {
	var v api.WorkerStatus
	err := c.do(ctx, http.MethodGet, "/health", &v)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable {
		return api.WorkerStatus{Status: "starting", Message: apiErr.Message}, nil
	}
	return v, err
}

// Version is GET /kcd/v1/version.
func (c *Client) Version(ctx context.Context) (api.VersionInfo, error) {
	var v api.VersionInfo
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/version", &v)
}

// doJSON sends a JSON body and decodes a JSON answer into out.
func (c *Client) doJSON(ctx context.Context, method, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode request %s %s: %w", method, path, err)
	}
	return c.send(ctx, method, path, body, out)
}

// ClusterInfo is GET /kcd/v1/cluster.
func (c *Client) ClusterInfo(ctx context.Context) (api.ClusterInfo, error) {
	var v api.ClusterInfo
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/cluster", &v)
}

// AddMember is POST /kcd/v1/cluster/members: the cluster adds m as a
// learner, and answers with the cluster as it is then.
func (c *Client) AddMember(ctx context.Context, m api.NewMember) (api.ClusterInfo, error) {
	var v api.ClusterInfo
	return v, c.doJSON(ctx, http.MethodPost, "/kcd/v1/cluster/members", m, &v)
}

// RemoveMember is DELETE /kcd/v1/cluster/members/{id}.
func (c *Client) RemoveMember(ctx context.Context, id uint64) error {
	return c.do(ctx, http.MethodDelete, "/kcd/v1/cluster/members/"+strconv.FormatUint(id, 10), nil)
}

// TransferLeader is POST /kcd/v1/cluster/leader; to 0 lets the leader pick.
// It returns the new leader.
func (c *Client) TransferLeader(ctx context.Context, to uint64) (uint64, error) {
	var v api.LeaderTransfer
	err := c.doJSON(ctx, http.MethodPost, "/kcd/v1/cluster/leader", api.LeaderTransfer{To: to}, &v)
	return v.Leader, err
}

// GetKey is GET /kcd/v1/store/keys/{key}.
func (c *Client) GetKey(ctx context.Context, key string) (api.KeyValue, error) {
	var v api.KeyValue
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/store/keys/"+key, &v)
}

// PutKey is PUT /kcd/v1/store/keys/{key}.
func (c *Client) PutKey(ctx context.Context, key string, value []byte) (int64, error) {
	var v api.StoreWrite
	err := c.sendAs(ctx, http.MethodPut, "/kcd/v1/store/keys/"+key, value, "application/octet-stream", &v)
	return v.Revision, err
}
