// Package coordclient is kcctl's client of the coordinator part of kcd's
// REST API: workers, their weight and drain, assignments, the rebalance
// journal and plans. Errors are daemon/client's (*client.APIError,
// *client.UnreachableError), so kcctl maps them to exit codes in one place.
package coordclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/restapi"
)

// maxBody bounds what the client reads of one response.
const maxBody = 32 << 20

// Client talks to the /kcd/v1 coordinator endpoints of one kcd node; any
// node answers (the plan is forwarded to the Raft leader by the node).
type Client struct {
	base string
	http *http.Client
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:8083).
func New(baseURL string) *Client {
	return &Client{base: strings.TrimRight(baseURL, "/"), http: &http.Client{Timeout: 30 * time.Second}}
}

// Workers is GET /kcd/v1/workers.
func (c *Client) Workers(ctx context.Context) ([]restapi.WorkerView, error) {
	var v []restapi.WorkerView
	return v, c.call(ctx, http.MethodGet, "/kcd/v1/workers", nil, &v)
}

// SetWeight is PUT /kcd/v1/workers/{id}/weight.
func (c *Client) SetWeight(ctx context.Context, id string, weight float64) (coordinator.Settings, error) {
	var v coordinator.Settings
	return v, c.call(ctx, http.MethodPut, workerPath(id)+"/weight", restapi.WorkerWeight{Weight: &weight}, &v)
}

// SetDraining is PUT /kcd/v1/workers/{id}/drain (on) or /undrain (off).
func (c *Client) SetDraining(ctx context.Context, id string, on bool) (coordinator.Settings, error) {
	verb := "/undrain"
	if on {
		verb = "/drain"
	}
	var v coordinator.Settings
	return v, c.call(ctx, http.MethodPut, workerPath(id)+verb, struct{}{}, &v)
}

// Assignments is GET /kcd/v1/assignments.
func (c *Client) Assignments(ctx context.Context) ([]restapi.AssignmentView, error) {
	var v []restapi.AssignmentView
	return v, c.call(ctx, http.MethodGet, "/kcd/v1/assignments", nil, &v)
}

// Rebalances is GET /kcd/v1/rebalances, newest first; limit 0 asks for the
// whole journal.
func (c *Client) Rebalances(ctx context.Context, limit int) ([]coordinator.Rebalance, error) {
	path := "/kcd/v1/rebalances"
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var v []coordinator.Rebalance
	return v, c.call(ctx, http.MethodGet, path, nil, &v)
}

// Plan is GET /kcd/v1/rebalances/plan: what the assignor would do now, as
// if worker drain (when not empty) were drained. Nothing changes.
func (c *Client) Plan(ctx context.Context, drain string) (coordinator.PlanResult, error) {
	path := "/kcd/v1/rebalances/plan"
	if drain != "" {
		path += "?drain=" + url.QueryEscape(drain)
	}
	var v coordinator.PlanResult
	return v, c.call(ctx, http.MethodGet, path, nil, &v)
}

func workerPath(id string) string { return "/kcd/v1/workers/" + url.PathEscape(id) }

// call sends in as JSON (nil: no body) and decodes a JSON answer into out.
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("build request %s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return &client.UnreachableError{URL: c.base, Err: err}
	}
	defer res.Body.Close()
	resBody, err := io.ReadAll(io.LimitReader(res.Body, maxBody))
	if err != nil {
		return fmt.Errorf("read response of %s %s: %w", method, path, err)
	}
	if res.StatusCode >= 400 {
		var em restapi.ErrorMessage
		if json.Unmarshal(resBody, &em) != nil || em.Message == "" {
			em.Message = strings.TrimSpace(string(resBody))
			if em.Message == "" {
				em.Message = http.StatusText(res.StatusCode)
			}
		}
		return &client.APIError{Status: res.StatusCode, ErrorCode: em.ErrorCode, Message: em.Message}
	}
	if out == nil || len(resBody) == 0 {
		return nil
	}
	if err := json.Unmarshal(resBody, out); err != nil {
		return fmt.Errorf("decode response of %s %s: %w", method, path, err)
	}
	return nil
}
