package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kcd-project/kcd/api"
)

// connectorPath is /connectors/{name} with name escaped.
func connectorPath(name string) string { return "/connectors/" + url.PathEscape(name) }

// ConnectorNames is GET /connectors.
func (c *Client) ConnectorNames(ctx context.Context) ([]string, error) {
	var v []string
	return v, c.do(ctx, http.MethodGet, "/connectors", &v)
}

// Connectors is GET /connectors?expand=status&expand=info: every
// connector's status and info by name.
func (c *Client) Connectors(ctx context.Context) (map[string]api.ConnectorExpanded, error) {
	var v map[string]api.ConnectorExpanded
	return v, c.do(ctx, http.MethodGet, "/connectors?expand=status&expand=info", &v)
}

// Connector is GET /connectors/{name}.
func (c *Client) Connector(ctx context.Context, name string) (api.ConnectorInfo, error) {
	var v api.ConnectorInfo
	return v, c.do(ctx, http.MethodGet, connectorPath(name), &v)
}

// ConnectorConfig is GET /connectors/{name}/config.
func (c *Client) ConnectorConfig(ctx context.Context, name string) (map[string]string, error) {
	var v map[string]string
	return v, c.do(ctx, http.MethodGet, connectorPath(name)+"/config", &v)
}

// ConnectorStatus is GET /connectors/{name}/status.
func (c *Client) ConnectorStatus(ctx context.Context, name string) (api.ConnectorStateInfo, error) {
	var v api.ConnectorStateInfo
	return v, c.do(ctx, http.MethodGet, connectorPath(name)+"/status", &v)
}

// ConnectorOffsets is GET /connectors/{name}/offsets.
func (c *Client) ConnectorOffsets(ctx context.Context, name string) (api.ConnectorOffsets, error) {
	var v api.ConnectorOffsets
	return v, c.do(ctx, http.MethodGet, connectorPath(name)+"/offsets", &v)
}

// AlterConnectorOffsets is PATCH /connectors/{name}/offsets: it sets the
// offsets given (a nil offset removes the partition's); the connector must
// be stopped.
func (c *Client) AlterConnectorOffsets(ctx context.Context, name string, offs api.ConnectorOffsets) (api.Message, error) {
	var v api.Message
	return v, c.doJSON(ctx, http.MethodPatch, connectorPath(name)+"/offsets", offs, &v)
}

// ResetConnectorOffsets is DELETE /connectors/{name}/offsets; the
// connector must be stopped.
func (c *Client) ResetConnectorOffsets(ctx context.Context, name string) (api.Message, error) {
	var v api.Message
	return v, c.do(ctx, http.MethodDelete, connectorPath(name)+"/offsets", &v)
}

// PutConnectorConfig is PUT /connectors/{name}/config: it creates the
// connector or replaces its config.
func (c *Client) PutConnectorConfig(ctx context.Context, name string, cfg map[string]string) (api.ConnectorInfo, error) {
	var v api.ConnectorInfo
	return v, c.doJSON(ctx, http.MethodPut, connectorPath(name)+"/config", cfg, &v)
}

// PatchConnectorConfig is PATCH /connectors/{name}/config: settings with a
// nil value are removed, the others set.
func (c *Client) PatchConnectorConfig(ctx context.Context, name string, patch map[string]*string) (api.ConnectorInfo, error) {
	var v api.ConnectorInfo
	return v, c.doJSON(ctx, http.MethodPatch, connectorPath(name)+"/config", patch, &v)
}

// DeleteConnector is DELETE /connectors/{name}.
func (c *Client) DeleteConnector(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, connectorPath(name), nil)
}

// PauseConnector is PUT /connectors/{name}/pause.
func (c *Client) PauseConnector(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPut, connectorPath(name)+"/pause", nil)
}

// ResumeConnector is PUT /connectors/{name}/resume.
func (c *Client) ResumeConnector(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodPut, connectorPath(name)+"/resume", nil)
}

// RestartConnector is POST /connectors/{name}/restart. With includeTasks
// the answer is the restart plan (the connector's status with the units to
// restart marked RESTARTING); without, nil.
func (c *Client) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (*api.ConnectorStateInfo, error) {
	var v *api.ConnectorStateInfo
	q := "?includeTasks=" + strconv.FormatBool(includeTasks) + "&onlyFailed=" + strconv.FormatBool(onlyFailed)
	return v, c.do(ctx, http.MethodPost, connectorPath(name)+"/restart"+q, &v)
}

// RestartTask is POST /connectors/{name}/tasks/{task}/restart.
func (c *Client) RestartTask(ctx context.Context, name string, task int) error {
	return c.do(ctx, http.MethodPost, connectorPath(name)+"/tasks/"+strconv.Itoa(task)+"/restart", nil)
}

// ValidateConfig is PUT /connector-plugins/{plugin}/config/validate.
func (c *Client) ValidateConfig(ctx context.Context, plugin string, cfg map[string]string) (api.ConfigInfos, error) {
	var v api.ConfigInfos
	return v, c.doJSON(ctx, http.MethodPut, "/connector-plugins/"+url.PathEscape(plugin)+"/config/validate", cfg, &v)
}
