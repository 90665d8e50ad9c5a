package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/restapi"
)

// The coordinator's endpoints: workers, their weight and drain,
// assignments, the rebalance journal and plans. Any node answers; the plan
// is forwarded to the Raft leader by the node.

// Workers is GET /kcd/v1/workers.
func (c *Client) Workers(ctx context.Context) ([]restapi.WorkerView, error) {
	var v []restapi.WorkerView
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/workers", &v)
}

// SetWeight is PUT /kcd/v1/workers/{id}/weight.
func (c *Client) SetWeight(ctx context.Context, id string, weight float64) (coordinator.Settings, error) {
	var v coordinator.Settings
	return v, c.doJSON(ctx, http.MethodPut, workerPath(id)+"/weight", restapi.WorkerWeight{Weight: &weight}, &v)
}

// SetDraining is PUT /kcd/v1/workers/{id}/drain (on) or /undrain (off).
func (c *Client) SetDraining(ctx context.Context, id string, on bool) (coordinator.Settings, error) {
	verb := "/undrain"
	if on {
		verb = "/drain"
	}
	var v coordinator.Settings
	return v, c.doJSON(ctx, http.MethodPut, workerPath(id)+verb, struct{}{}, &v)
}

// Assignments is GET /kcd/v1/assignments.
func (c *Client) Assignments(ctx context.Context) ([]restapi.AssignmentView, error) {
	var v []restapi.AssignmentView
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/assignments", &v)
}

// Rebalances is GET /kcd/v1/rebalances, newest first; limit 0 asks for the
// whole journal.
func (c *Client) Rebalances(ctx context.Context, limit int) ([]coordinator.Rebalance, error) {
	path := "/kcd/v1/rebalances"
	if limit > 0 {
		path += "?limit=" + strconv.Itoa(limit)
	}
	var v []coordinator.Rebalance
	return v, c.do(ctx, http.MethodGet, path, &v)
}

// Plan is GET /kcd/v1/rebalances/plan: what the assignor would do now, as
// if worker drain (when not empty) were drained. Nothing changes.
func (c *Client) Plan(ctx context.Context, drain string) (coordinator.PlanResult, error) {
	path := "/kcd/v1/rebalances/plan"
	if drain != "" {
		path += "?drain=" + url.QueryEscape(drain)
	}
	var v coordinator.PlanResult
	return v, c.do(ctx, http.MethodGet, path, &v)
}

func workerPath(id string) string { return "/kcd/v1/workers/" + url.PathEscape(id) }
