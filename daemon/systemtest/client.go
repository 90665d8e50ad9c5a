package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ClusterInfo is the body of GET /kcd/v1/cluster, as the tests read it.
type ClusterInfo struct {
	ClusterID        string       `json:"cluster_id"`
	Self             uint64       `json:"self"`
	Leader           uint64       `json:"leader"`
	Term             uint64       `json:"term"`
	CommitIndex      uint64       `json:"commit_index"`
	Members          []MemberInfo `json:"members"`
	ReachabilityFrom uint64       `json:"reachability_from"`
	Health           struct {
		Voters   int      `json:"voters"`
		VotersUp int      `json:"voters_up"`
		Quorum   int      `json:"quorum"`
		QuorumOK bool     `json:"quorum_ok"`
		Alarms   []string `json:"alarms"`
	} `json:"health"`
}

// MemberInfo is one member in ClusterInfo.
type MemberInfo struct {
	ID            uint64   `json:"id"`
	RESTURL       string   `json:"rest_url"`
	PeerURL       string   `json:"peer_url"`
	Roles         []string `json:"roles"`
	Raft          string   `json:"raft"`
	Reachability  string   `json:"reachability"` // reachable, unreachable or unknown
	Reachable     bool     `json:"reachable"`
	LastContactMS *int64   `json:"last_contact_ms"`
}

// Member returns member id, if listed.
func (c ClusterInfo) Member(id uint64) (MemberInfo, bool) {
	for _, m := range c.Members {
		if m.ID == id {
			return m, true
		}
	}
	return MemberInfo{}, false
}

// httpClient has no overall timeout: every call takes a context.
var httpClient = &http.Client{Transport: &http.Transport{
	MaxIdleConns:        256,
	MaxIdleConnsPerHost: 256,
	IdleConnTimeout:     30 * time.Second,
}}

// StatusError is a non-2xx answer.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

func (n *Node) do(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, n.URL()+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		ct := "application/json"
		if method == http.MethodPut && strings.HasPrefix(path, "/kcd/v1/store/keys/") {
			ct = "application/octet-stream" // the raw store API takes the value's bytes
		}
		req.Header.Set("Content-Type", ct)
	}
	if n.Token != "" {
		req.Header.Set("Authorization", "Bearer "+n.Token)
	}
	res, err := n.HTTPClient().Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, &StatusError{Status: res.StatusCode, Body: string(b)}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("%s %s: decode %q: %w", method, path, b, err)
		}
	}
	return res.StatusCode, nil
}

// Info is GET /kcd/v1/cluster?view=local: the node's own view, without
// asking the leader for the members' reachability (a frozen leader would
// slow the answer down).
func (n *Node) Info(ctx context.Context) (ClusterInfo, error) {
	var info ClusterInfo
	_, err := n.do(ctx, http.MethodGet, "/kcd/v1/cluster?view=local", nil, &info)
	return info, err
}

func keyPath(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "/kcd/v1/store/keys/" + strings.Join(segs, "/")
}

// Put is PUT /kcd/v1/store/keys/{key}: nil error means acknowledged.
func (n *Node) Put(ctx context.Context, key string, value []byte) (int64, error) {
	var out struct {
		Revision int64 `json:"revision"`
	}
	_, err := n.do(ctx, http.MethodPut, keyPath(key), value, &out)
	return out.Revision, err
}

// Get is GET /kcd/v1/store/keys/{key}; found is false on a 404.
func (n *Node) Get(ctx context.Context, key string) (value string, found bool, err error) {
	var out struct {
		Value string `json:"value"`
	}
	status, err := n.do(ctx, http.MethodGet, keyPath(key), nil, &out)
	if status == http.StatusNotFound {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return out.Value, true, nil
}

// Scan is GET /kcd/v1/store/keys?prefix=: every key under prefix with its
// value, and the revision read at.
func (n *Node) Scan(ctx context.Context, prefix string) (map[string]string, int64, error) {
	var out struct {
		Revision int64 `json:"revision"`
		Keys     []struct {
			Key   string `json:"key"`
			Value string `json:"value"`
		} `json:"keys"`
	}
	if _, err := n.do(ctx, http.MethodGet, "/kcd/v1/store/keys?prefix="+url.QueryEscape(prefix), nil, &out); err != nil {
		return nil, 0, err
	}
	kv := make(map[string]string, len(out.Keys))
	for _, k := range out.Keys {
		kv[k.Key] = k.Value
	}
	return kv, out.Revision, nil
}

// RemoveMember is DELETE /kcd/v1/cluster/members/{id}.
func (n *Node) RemoveMember(ctx context.Context, id uint64) error {
	_, err := n.do(ctx, http.MethodDelete, fmt.Sprintf("/kcd/v1/cluster/members/%d", id), nil, nil)
	return err
}

// Post sends a JSON body and returns the status code.
func (n *Node) Post(ctx context.Context, path string, body []byte) (int, error) {
	return n.do(ctx, http.MethodPost, path, body, nil)
}

// GetJSON GETs path and decodes the answer into out.
func (n *Node) GetJSON(ctx context.Context, path string, out any) error {
	_, err := n.do(ctx, "GET", path, nil, out)
	return err
}
