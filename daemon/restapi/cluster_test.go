package restapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// staticCluster answers Info with a fixed view.
type staticCluster struct{ info ClusterInfo }

func (c staticCluster) Info(context.Context) (ClusterInfo, error) {
	info := c.info
	info.Members = slices.Clone(info.Members)
	return info, nil
}

func (staticCluster) AddMember(context.Context, NewMember) error             { return nil }
func (staticCluster) RemoveMember(context.Context, uint64) error             { return nil }
func (staticCluster) TransferLeader(context.Context, uint64) (uint64, error) { return 0, nil }
func (staticCluster) Leader() (bool, string)                                 { return false, "" }

func member(id uint64, url, reach string) MemberInfo {
	return MemberInfo{ID: id, RESTURL: url, Raft: "voter", Reachability: reach, Reachable: reach == Reachable}
}

// A follower shows the leader's view of reachability; when the leader does
// not answer, its own, in which the other follower is unknown.
func TestClusterInfoOnAFollowerAsksTheLeader(t *testing.T) {
	leader := staticCluster{ClusterInfo{Self: 1, Leader: 1, ReachabilityFrom: 1}}
	lsrv := httptest.NewServer(NewHandler(&fakeNode{ready: true}, Options{Cluster: &leader}))
	defer lsrv.Close()
	leader.info.Members = []MemberInfo{member(1, lsrv.URL, Reachable), member(2, "", Reachable), member(3, "", Unreachable)}

	follower := staticCluster{ClusterInfo{Self: 2, Leader: 1, ReachabilityFrom: 2,
		Members: []MemberInfo{member(1, lsrv.URL, Reachable), member(2, "", Reachable), member(3, "", Unknown)}}}
	h := NewHandler(&fakeNode{ready: true}, Options{Cluster: follower})
	get := func(path string) ClusterInfo {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		var info ClusterInfo
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &info) != nil {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return info
	}
	reach := func(info ClusterInfo) []string {
		var out []string
		for _, m := range info.Members {
			out = append(out, m.Reachability)
		}
		return out
	}
	info := get("/kcd/v1/cluster")
	if got := reach(info); info.ReachabilityFrom != 1 || got[0] != Reachable || got[1] != Reachable || got[2] != Unreachable || info.Members[2].Reachable {
		t.Errorf("leader's view: from %d, %v", info.ReachabilityFrom, got)
	}
	if h := info.Health; h.Voters != 3 || h.VotersUp != 2 || h.Quorum != 2 || !h.QuorumOK || h.Alarms == nil {
		t.Errorf("health %+v", h)
	}
	info = get("/kcd/v1/cluster?view=local")
	if got := reach(info); info.ReachabilityFrom != 2 || got[2] != Unknown {
		t.Errorf("own view: from %d, %v", info.ReachabilityFrom, got)
	}
	if h := info.Health; h.VotersUp != 2 || !h.QuorumOK {
		t.Errorf("health of the own view %+v", h)
	}

	lsrv.Close() // the leader does not answer
	info = get("/kcd/v1/cluster")
	if got := reach(info); info.ReachabilityFrom != 2 || got[2] != Unknown {
		t.Errorf("leader gone: from %d, %v", info.ReachabilityFrom, got)
	}
}

// leadingCluster is the leader of three voters and a learner; its changes
// fail as Raft's do, with plain errors.
type leadingCluster struct{ staticCluster }

func (leadingCluster) Leader() (bool, string) { return true, "" }
func (leadingCluster) TransferLeader(_ context.Context, to uint64) (uint64, error) {
	if to > 3 {
		return 0, fmt.Errorf("raft: %d is not a voter", to)
	}
	return to, nil
}
func (leadingCluster) RemoveMember(_ context.Context, id uint64) error {
	if id > 4 {
		return fmt.Errorf("raft: no member %d", id)
	}
	return nil
}

// Naming a member the cluster lacks, or a learner to lead, a role or URL
// kcd cannot use, a body of the wrong types: the caller's mistake, a 4xx
// that says so in words, never a 500 or an accepted change.
func TestClusterChangesRefuseUnknownMembers(t *testing.T) {
	c := leadingCluster{staticCluster{ClusterInfo{Self: 1, Leader: 1, Members: []MemberInfo{
		member(1, "", Reachable), member(2, "", Reachable), member(3, "", Reachable),
		{ID: 4, Raft: "learner", Reachability: Reachable}}}}}
	h := NewHandler(&fakeNode{ready: true}, Options{Cluster: c})
	for _, tc := range []struct {
		method, path, body string
		status             int
		message            string
	}{
		{"POST", "/kcd/v1/cluster/leader", `{"to":7}`, http.StatusNotFound, "the cluster has no member 7 (its members: 1, 2, 3, 4)"},
		{"POST", "/kcd/v1/cluster/leader", `{"to":4}`, http.StatusConflict, "member 4 is a learner, not a voter"},
		{"POST", "/kcd/v1/cluster/leader", `{"to":2}`, http.StatusOK, ""},
		{"DELETE", "/kcd/v1/cluster/members/9", "", http.StatusNotFound, "the cluster has no member 9"},
		{"DELETE", "/kcd/v1/cluster/members/4", "", http.StatusNoContent, ""},
		{"POST", "/kcd/v1/cluster/leader", `{"to":-1}`, http.StatusBadRequest, "request body: to must be a whole number from 0 up, got a JSON number -1"},
		{"POST", "/kcd/v1/cluster/members", `{"id":5,"peer_url":"http://h:1","roles":["bogus"]}`, http.StatusBadRequest, `role "bogus" is not raft or worker`},
		{"POST", "/kcd/v1/cluster/members", `{"id":5,"peer_url":"http://h:1","rest_url":"ht tp://x"}`, http.StatusBadRequest, `rest_url "ht tp://x" is not an http:// or https:// URL`},
		{"POST", "/kcd/v1/cluster/members", `{"id":5,"peer_url":"http://h:1","rest_url":"http://h:2","roles":["raft","worker"]}`, http.StatusCreated, ""},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		h.ServeHTTP(rec, req)
		var em ErrorMessage
		_ = json.Unmarshal(rec.Body.Bytes(), &em)
		if rec.Code != tc.status || !strings.Contains(em.Message, tc.message) || (tc.message != "" && em.ErrorCode != tc.status) {
			t.Errorf("%s %s %s: %d %s", tc.method, tc.path, tc.body, rec.Code, rec.Body)
		}
	}
}
