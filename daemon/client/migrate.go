package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kcd-project/kcd/api"
)

// Imports and export (kcctl migrate). Any node answers; the imports are
// forwarded to the Raft leader by the node.

// Import is POST /kcd/v1/imports: the import as opened (state staging),
// or for req.DryRun what it would do (its items; no id). A connector that
// Overwrite cannot replace because it is not stopped makes it fail with
// 409 (*APIError), naming them.
func (c *Client) Import(ctx context.Context, req api.ImportRequest) (api.Import, error) {
	var v api.Import
	return v, c.doJSON(ctx, http.MethodPost, "/kcd/v1/imports", req, &v)
}

// ImportOffsets is POST /kcd/v1/imports/{id}/offsets: stages at most
// api.MaxImportOffsets offsets.
func (c *Client) ImportOffsets(ctx context.Context, id string, offs api.ImportOffsets) (api.Import, error) {
	var v api.Import
	return v, c.doJSON(ctx, http.MethodPost, "/kcd/v1/imports/"+url.PathEscape(id)+"/offsets", offs, &v)
}

// commitTimeout bounds a commit, whose answer waits for the roll-forward
// of every connector.
const commitTimeout = 5 * time.Minute

// CommitImport is POST /kcd/v1/imports/{id}/commit: the import once done.
// Committing again is harmless: it finishes a committed import, and
// answers a done one's state.
func (c *Client) CommitImport(ctx context.Context, id string) (api.Import, error) {
	hc := *c.http
	hc.Timeout = commitTimeout
	long := &Client{bases: c.bases, http: &hc, creds: c.creds}
	long.cur.Store(c.cur.Load())
	var v api.Import
	return v, long.send(ctx, http.MethodPost, "/kcd/v1/imports/"+url.PathEscape(id)+"/commit", []byte("{}"), &v)
}

// AbortImport is DELETE /kcd/v1/imports/{id}: drops a staging import.
func (c *Client) AbortImport(ctx context.Context, id string) (api.Import, error) {
	var v api.Import
	return v, c.do(ctx, http.MethodDelete, "/kcd/v1/imports/"+url.PathEscape(id), &v)
}

// GetImport is GET /kcd/v1/imports/{id}.
func (c *Client) GetImport(ctx context.Context, id string) (api.Import, error) {
	var v api.Import
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/imports/"+url.PathEscape(id), &v)
}

// Imports is GET /kcd/v1/imports: the imports kept, the latest first.
func (c *Client) Imports(ctx context.Context) ([]api.Import, error) {
	var v []api.Import
	return v, c.do(ctx, http.MethodGet, "/kcd/v1/imports", &v)
}

// Export is GET /kcd/v1/export: the connectors after name after, at most
// limit (0: the server's default). Offsets keep their numbers exact
// (json.Number).
func (c *Client) Export(ctx context.Context, after string, limit int) (api.Export, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/kcd/v1/export"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodGet, path, &raw); err != nil {
		return api.Export{}, err
	}
	var v api.Export
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return api.Export{}, fmt.Errorf("decode response of GET %s: %w", path, err)
	}
	return v, nil
}
