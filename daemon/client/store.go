package client

import (
	"context"
	"net/http"

	"github.com/kcd-project/kcd/api"
)

// The metadata store's endpoints. Any node answers; a switch is forwarded
// to the Raft leader by the node.

// StoreStatus is GET /kcd/v1/store/status.
func (c *Client) StoreStatus(ctx context.Context) (api.StoreStatus, error) {
	var v api.StoreStatus
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/store/status", &v)
}

// SwitchStore is POST /kcd/v1/store/switch: the switch as it started
// (state running), or what it would do (state dry-run) for req.DryRun.
func (c *Client) SwitchStore(ctx context.Context, req api.StoreSwitchRequest) (api.StoreSwitch, error) {
	var v api.StoreSwitch
	return v, c.doJSON(ctx, http.MethodPost, "/kcd/v1/store/switch", req, &v)
}
