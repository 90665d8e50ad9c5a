package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kcd-project/kcd/api"
)

// The coordinator's endpoints: workers, their weight and drain,
// assignments, the rebalance journal and plans. Any node answers; the plan
// is forwarded to the Raft leader by the node.

// Workers is GET /kcd/v1/workers.
func (c *Client) Workers(ctx context.Context) ([]api.WorkerView, error) {
	var v []api.WorkerView
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/workers", &v)
}

// SetWeight is PUT /kcd/v1/workers/{id}/weight.
func (c *Client) SetWeight(ctx context.Context, id string, weight float64) (api.Settings, error) {
	var v api.Settings
	return v, c.doJSON(ctx, http.MethodPut, workerPath(id)+"/weight", api.WorkerWeight{Weight: &weight}, &v)
}

// SetDraining is PUT /kcd/v1/workers/{id}/drain (on) or /undrain (off).
func (c *Client) SetDraining(ctx context.Context, id string, on bool) (api.Settings, error) {
	verb := "/undrain"
	if on {
		verb = "/drain"
	}
	var v api.Settings
	return v, c.doJSON(ctx, http.MethodPut, workerPath(id)+verb, struct{}{}, &v)
}

// Assignments is GET /kcd/v1/assignments.
func (c *Client) Assignments(ctx context.Context) ([]api.AssignmentView, error) {
	var v []api.AssignmentView
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/assignments", &v)
}

// Rebalances is GET /kcd/v1/rebalances, newest first; limit 0 asks for the
// whole journal.
func (c *Client) Rebalances(ctx context.Context, limit int) ([]api.Rebalance, error) {
	path := "/kcd/v1/rebalances"
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var v []api.Rebalance
	return v, c.do(ctx, http.MethodGet, path, &v)
}

// Plan is GET /kcd/v1/rebalances/plan: what the assignor would do now, as
// if worker drain (when not empty) were drained. Nothing changes.
func (c *Client) Plan(ctx context.Context, drain string) (api.PlanResult, error) {
	path := "/kcd/v1/rebalances/plan"
	if drain != "" {
		path += "?drain=" + url.QueryEscape(drain)
	}
	var v api.PlanResult
	return v, c.do(ctx, http.MethodGet, path, &v)
}

func workerPath(id string) string { return "/kcd/v1/workers/" + url.PathEscape(id) }
