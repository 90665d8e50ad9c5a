package raft

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Member is what the cluster knows of one node. It travels in the context of
// the configuration change that adds the node, so every member learns how to
// reach it from the log itself.
type Member struct {
	ID      uint64   `json:"id"`
	PeerURL string   `json:"peer_url"`
	RESTURL string   `json:"rest_url,omitempty"`
	Roles   []string `json:"roles,omitempty"`
}

func (m Member) encode() []byte {
	b, _ := json.Marshal(m) // a struct of strings cannot fail to encode
	return b
}

func decodeMember(b []byte) (Member, error) {
	var m Member
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decode member: %w", err)
	}
	return m, nil
}

// ParseInitialCluster parses "1=http://h1:7001,2=http://h2:7001" (a bare
// host:port is taken as http://host:port).
func ParseInitialCluster(s string) ([]Member, error) {
	var out []Member
	seen := map[uint64]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idText, addr, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("initial cluster entry %q is not id=peer-url", part)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(idText), 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("initial cluster entry %q: the id must be a positive integer", part)
		}
		if seen[id] {
			return nil, fmt.Errorf("initial cluster: id %d appears twice", id)
		}
		seen[id] = true
		u, err := NormalizePeerURL(addr)
		if err != nil {
			return nil, fmt.Errorf("initial cluster entry %q: %w", part, err)
		}
		out = append(out, Member{ID: id, PeerURL: u})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("initial cluster is empty")
	}
	slices.SortFunc(out, func(a, b Member) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// NormalizePeerURL turns host:port or a URL into a URL with a scheme and no
// trailing slash.
func NormalizePeerURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("peer address %q is not host:port or an http(s) URL", s)
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host, "/"), nil
}

// ClusterIDFor derives the cluster id from the initial cluster, so that every
// node bootstrapped with the same --initial-cluster agrees on it without
// talking to the others first.
func ClusterIDFor(members []Member) string {
	h := sha256.New()
	for _, m := range members {
		fmt.Fprintf(h, "%d=%s\n", m.ID, m.PeerURL)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// identity is what a data dir records of the node it belongs to, so that a
// node started with the wrong data dir or the wrong cluster refuses to run.
type identity struct {
	NodeID    uint64 `json:"node_id"`
	ClusterID string `json:"cluster_id"`
}

const identityFile = "identity.json"

func readIdentity(dir string) (identity, bool, error) {
	var id identity
	b, err := os.ReadFile(filepath.Join(dir, identityFile))
	if os.IsNotExist(err) {
		return id, false, nil
	}
	if err != nil {
		return id, false, fmt.Errorf("read node identity: %w", err)
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return id, false, fmt.Errorf("node identity %s is corrupt: %w", filepath.Join(dir, identityFile), err)
	}
	return id, true, nil
}

func writeIdentity(dir string, id identity) error {
	b, _ := json.Marshal(id)
	tmp := filepath.Join(dir, identityFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("write node identity: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write node identity: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync node identity: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write node identity: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, identityFile)); err != nil {
		return fmt.Errorf("write node identity: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir for sync: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
