package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/tui/printer"
)

// Gone workers stay in the list with their state and when they went.
func TestWorkerListShowsGoneWorkers(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	gone := now.Add(-90 * time.Second)
	ws := []restapi.WorkerView{
		{ID: "10.0.0.1:8083", State: "alive", NodeID: 1, Weight: 1, Since: now.Add(-time.Hour), Connectors: 1},
		{ID: "10.0.0.4:8083", State: "expired", NodeID: 4, Weight: 1, Since: now.Add(-2 * time.Hour), GoneAt: &gone, Tasks: 2},
	}
	var out bytes.Buffer
	if err := printer.Print(&out, "wide", workersPrintable(ws, now)); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"ID", "STATE", "NODE", "WEIGHT", "DRAINING", "CONNECTORS", "TASKS", "AGE", "REST-URL", "GONE"},
		{"10.0.0.1:8083", "alive", "1", "1", "false", "1", "0", "60m", "<none>", "<none>"},
		{"10.0.0.4:8083", "expired", "4", "1", "false", "0", "2", "120m", "<none>", "90s", "ago"},
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
}

// The summary says whether a quorum is up, the alarms, and whose view the
// reachability is when it is not the leader's.
func TestClusterSummary(t *testing.T) {
	info := restapi.ClusterInfo{ClusterID: "c1", Self: 2, Leader: 1, Term: 4, CommitIndex: 99, ReachabilityFrom: 1,
		Health: restapi.ClusterHealth{Voters: 3, VotersUp: 3, Quorum: 2, QuorumOK: true, Alarms: []string{}},
		Members: []restapi.MemberInfo{
			{ID: 1, Raft: "voter", Roles: []string{"raft", "worker"}, Reachability: "reachable", Reachable: true},
			{ID: 2, Raft: "voter", Roles: []string{"raft", "worker"}, Reachability: "reachable", Reachable: true},
			{ID: 3, Raft: "voter", Roles: []string{"raft", "worker"}, Reachability: "unknown"},
		}}
	want := "cluster c1, leader 1, term 4, commit index 99\nquorum ok: 3 of 3 voters up, 2 needed\nalarms: none\n\n"
	if got := clusterSummary(info); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
	var out bytes.Buffer
	if err := printer.Print(&out, "table", clusterPrintable(info)); err != nil {
		t.Fatal(err)
	}
	if r := row(t, out.String(), "3"); r[3] != "unknown" { // LEADER is empty
		t.Errorf("member 3: %q", r)
	}

	info.Leader, info.ReachabilityFrom = 0, 2
	info.Health = restapi.ClusterHealth{Voters: 3, VotersUp: 1, Quorum: 2, Alarms: []string{"CORRUPT on member 3"}}
	want = "cluster c1, leader <none>, term 4, commit index 99\nquorum NOT OK: 1 of 3 voters up, 2 needed\nalarms: CORRUPT on member 3\nreachability as member 2 sees it (the leader could not be asked)\n\n"
	if got := clusterSummary(info); got != want {
		t.Errorf("summary without a leader:\n%s\nwant:\n%s", got, want)
	}
}
