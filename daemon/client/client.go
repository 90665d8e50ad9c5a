// Package client is a typed Go client of kcd's REST API (Kafka Connect's API
// and /kcd/v1), used by kcctl and by tests.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/restapi"
)

// maxBody bounds what the client reads of one response.
const maxBody = 32 << 20

// Client talks to one kcd (or Kafka Connect) REST endpoint.
type Client struct {
	base string
	http *http.Client
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:8083).
func New(baseURL string) *Client {
	return &Client{
		base: strings.TrimRight(baseURL, "/"),
		http: &http.Client{Timeout: 30 * time.Second},
	}
}

// BaseURL is the URL the client talks to.
func (c *Client) BaseURL() string { return c.base }

// APIError is an error answer of the API, in Kafka Connect's error shape.
type APIError struct {
	Status    int
	ErrorCode int
	Message   string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
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

// do sends a request and decodes a JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("build request %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return &UnreachableError{URL: c.base, Err: err}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return fmt.Errorf("read response of %s %s: %w", method, path, err)
	}
	if res.StatusCode >= 400 {
		var em restapi.ErrorMessage
		if json.Unmarshal(body, &em) != nil || em.Message == "" {
			em.Message = strings.TrimSpace(string(body))
			if em.Message == "" {
				em.Message = http.StatusText(res.StatusCode)
			}
		}
		return &APIError{Status: res.StatusCode, ErrorCode: em.ErrorCode, Message: em.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode response of %s %s: %w", method, path, err)
	}
	return nil
}

// ServerInfo is GET /.
func (c *Client) ServerInfo(ctx context.Context) (restapi.ServerInfo, error) {
	var v restapi.ServerInfo
	return v, c.do(ctx, http.MethodGet, "/", &v)
}

// Health is GET /health. A node that is still starting answers 503 with a
// WorkerStatus body; that is returned without an error.
func (c *Client) Health(ctx context.Context) (restapi.WorkerStatus, error) {
	var v restapi.WorkerStatus
	err := c.do(ctx, http.MethodGet, "/health", &v)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable {
		return restapi.WorkerStatus{Status: "starting", Message: apiErr.Message}, nil
	}
	return v, err
}

// Version is GET /kcd/v1/version.
func (c *Client) Version(ctx context.Context) (restapi.VersionInfo, error) {
	var v restapi.VersionInfo
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/version", &v)
}
