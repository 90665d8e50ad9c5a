package restapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
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
