package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/kcd-project/kcd/api"
)

// Kafka Connect's logger endpoints, which kcd and Kafka Connect both serve.

// Loggers is GET /admin/loggers: every logger's level by name.
func (c *Client) Loggers(ctx context.Context) (map[string]api.LoggerLevel, error) {
	var v map[string]api.LoggerLevel
	return v, c.do(ctx, http.MethodGet, "/admin/loggers", &v)
}

// Logger is GET /admin/loggers/{name}.
func (c *Client) Logger(ctx context.Context, name string) (api.LoggerLevel, error) {
	var v api.LoggerLevel
	return v, c.do(ctx, http.MethodGet, "/admin/loggers/"+url.PathEscape(name), &v)
}

// SetLogger is PUT /admin/loggers/{name}?scope=: with api.ScopeWorker
// (or "") it returns the loggers the node changed; with api.ScopeCluster
// the server answers no list (every node applies the level).
func (c *Client) SetLogger(ctx context.Context, name, level, scope string) ([]string, error) {
	path := "/admin/loggers/" + url.PathEscape(name)
	if scope != "" {
		path += "?scope=" + url.QueryEscape(scope)
	}
	var changed []string
	return changed, c.doJSON(ctx, http.MethodPut, path, api.LoggerLevelRequest{Level: level}, &changed)
}
