package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kcd-project/kcd/api"
)

// Kafka Connect's connector endpoints, which kcd and Kafka Connect both
// serve.

// Plugins is GET /connector-plugins; connectorsOnly false adds
// converters, transformations and predicates.
func (c *Client) Plugins(ctx context.Context, connectorsOnly bool) ([]api.PluginInfo, error) {
	var v []api.PluginInfo
	return v, c.do(ctx, http.MethodGet, "/connector-plugins?connectorsOnly="+strconv.FormatBool(connectorsOnly), &v)
}

// Statuses is GET /connectors?expand=status: every connector's status by
// name.
func (c *Client) Statuses(ctx context.Context) (map[string]api.ConnectorStateInfo, error) {
	var v map[string]struct {
		Status api.ConnectorStateInfo `json:"status"`
	}
	if err := c.do(ctx, http.MethodGet, "/connectors?expand=status", &v); err != nil {
		return nil, err
	}
	out := make(map[string]api.ConnectorStateInfo, len(v))
	for name, e := range v {
		out[name] = e.Status
	}
	return out, nil
}

// StopConnector is PUT /connectors/{name}/stop.
func (c *Client) StopConnector(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPut, "/connectors/"+url.PathEscape(name)+"/stop", nil)
}
