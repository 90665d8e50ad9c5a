package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/restapi"
)

// startNodeWithDatagen starts a raft+worker node, creates a Datagen
// connector "gen" with three tasks, and waits until the coordinator has
// assigned all four units. It returns the node's URL and its worker's id.
func startNodeWithDatagen(t *testing.T) (string, string) {
	t.Helper()
	url := startNode(t)
	body := `{"name":"gen","config":{"connector.class":"Datagen","topic":"gen","tasks.max":"3","rate.per.task":"1"}}`
	res, err := http.Post(url+"/connectors", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create connector: %s", res.Status)
	}
	var as []restapi.AssignmentView
	for deadline := time.Now().Add(20 * time.Second); ; {
		getJSON(t, url+"/kcd/v1/assignments", &as)
		if len(as) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tasks were not assigned: %+v", as)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return url, as[0].Worker
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %s: %v", url, res.Status, err)
	}
}

// ok runs kcctl against url and fails unless it exits 0.
func ok(t *testing.T, url string, args ...string) string {
	t.Helper()
	code, out, errOut := kcctl(t, append([]string{"--server", url}, args...)...)
	if code != 0 {
		t.Fatalf("kcctl %v: exit %d\n%s%s", args, code, out, errOut)
	}
	return out
}

func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
}

// row finds the table row whose first cell is first.
func row(t *testing.T, table, first string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return f
		}
	}
	t.Fatalf("no row %q in\n%s", first, table)
	return nil
}

func workers(t *testing.T, url string) []restapi.WorkerView {
	t.Helper()
	var ws []restapi.WorkerView
	decode(t, ok(t, url, "worker", "list", "-o", "json"), &ws)
	return ws
}

func TestCoordinatorCommands(t *testing.T) {
	url, id := startNodeWithDatagen(t)
	units := []string{"gen/connector", "gen/0", "gen/1", "gen/2"}

	t.Run("worker list", func(t *testing.T) {
		out := ok(t, url, "worker", "list")
		if !strings.HasPrefix(out, "ID ") || !strings.Contains(out, "CONNECTORS") || !strings.Contains(out, "AGE") {
			t.Errorf("header:\n%s", out)
		}
		// ID STATE NODE WEIGHT DRAINING CONNECTORS TASKS AGE
		r := row(t, out, id)
		if len(r) != 8 || r[1] != "alive" || r[2] != "1" || r[3] != "1" || r[4] != "false" || r[5] != "1" || r[6] != "3" {
			t.Errorf("row %q", r)
		}
		if wide := ok(t, url, "worker", "list", "-o", "wide"); !strings.Contains(wide, "REST-URL") || !strings.Contains(row(t, wide, id)[8], url) {
			t.Errorf("wide:\n%s", wide)
		}
		ws := workers(t, url)
		if len(ws) != 1 || ws[0].ID != id || ws[0].State != "alive" || ws[0].NodeID != 1 || ws[0].Tasks != 3 || ws[0].Connectors != 1 || ws[0].RESTURL != url {
			t.Errorf("json: %+v", ws)
		}
		if name := ok(t, url, "worker", "list", "-o", "name"); name != "worker/"+id+"\n" {
			t.Errorf("name: %q", name)
		}
	})

	t.Run("assignments", func(t *testing.T) {
		out := ok(t, url, "assignments")
		for _, u := range units {
			// UNIT WORKER EPOCH REVOKING-TO
			if r := row(t, out, u); r[1] != id || !strings.Contains(r[2], ".") || r[3] != "<none>" {
				t.Errorf("%s: %q", u, r)
			}
		}
		var as []restapi.AssignmentView
		decode(t, ok(t, url, "assignments", "--connector", "gen", "-o", "json"), &as)
		if len(as) != 4 || as[0].Task != nil || as[0].Worker != id || as[0].Epoch.Term == 0 {
			t.Errorf("json: %+v", as)
		}
		if code, out, errOut := kcctl(t, "--server", url, "assignments", "--connector", "other"); code != exitNotFound || out != "" || !strings.Contains(errOut, `no connector "other"`) {
			t.Errorf("unknown connector: exit %d, %q %q", code, out, errOut)
		}
	})

	t.Run("rebalance plan", func(t *testing.T) {
		out := ok(t, url, "rebalance", "plan")
		if !strings.HasPrefix(out, "plan at generation ") || !strings.Contains(out, "\nno moves\n") {
			t.Errorf("balanced cluster:\n%s", out)
		}
		// WORKER WEIGHT QUOTA BEFORE AFTER
		if r := row(t, out, id); len(r) != 5 || r[3] != "4" || r[4] != "4" {
			t.Errorf("share %q in\n%s", r, out)
		}
		var p coordinator.PlanResult
		decode(t, ok(t, url, "rebalance", "plan", "-o", "json"), &p)
		if p.Epoch.Generation == 0 || len(p.Moves) != 0 || len(p.Shares) != 1 || p.Shares[0].Worker != id || p.Shares[0].Before != 4 {
			t.Errorf("json: %+v", p)
		}

		code, out, errOut := kcctl(t, "--server", url, "rebalance", "plan", "--drain", "nobody:1")
		if code != exitNotFound || out != "" || !strings.Contains(errOut, `Error: coordinator: unknown worker: no worker "nobody:1" has a session (HTTP 404)`) {
			t.Errorf("unknown worker: exit %d, out %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("name and wide", func(t *testing.T) {
		// -o name names the plan and each unit it would move.
		out := ok(t, url, "rebalance", "plan", "--drain", id, "-o", "name")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 5 || !strings.HasPrefix(lines[0], "plan/") || !slices.Contains(lines, "unit/gen/connector") || !slices.Contains(lines, "unit/gen/2") {
			t.Errorf("plan -o name:\n%s", out)
		}
		if out := ok(t, url, "rebalance", "plan", "-o", "name"); !strings.HasPrefix(out, "plan/") {
			t.Errorf("balanced plan -o name: %q", out)
		}
		// -o wide has columns the table lacks.
		wide := ok(t, url, "rebalance", "plan", "--drain", id, "-o", "wide")
		if !strings.Contains(wide, "STOPS-FIRST") || !strings.Contains(wide, "OF-QUOTA") {
			t.Errorf("plan -o wide:\n%s", wide)
		}
		if r := row(t, wide, id); len(r) != 7 || r[5] != "-4" {
			t.Errorf("share in plan -o wide: %q", r)
		}
		wide = ok(t, url, "assignments", "-o", "wide")
		// UNIT WORKER EPOCH REVOKING-TO WORKER-STATE NODE
		if r := row(t, wide, "gen/0"); len(r) != 6 || r[4] != "alive" || r[5] != "1" {
			t.Errorf("assignments -o wide: %q in\n%s", r, wide)
		}
	})

	t.Run("rebalance history", func(t *testing.T) {
		// json first: the table, read after it, has every entry it has.
		var rbs []coordinator.Rebalance
		decode(t, ok(t, url, "rebalance", "history", "-o", "json"), &rbs)
		out := ok(t, url, "rebalance", "history")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"GENERATION", "AGE", "TRIGGERS", "MOVES", "DURATION"}) || len(lines) < 3 {
			t.Fatalf("table:\n%s", out)
		}
		if !strings.Contains(out, "worker joined: "+id) {
			t.Errorf("no join in\n%s", out)
		}
		var placed []string
		for i, rb := range rbs {
			if i > 0 && rb.Epoch.Generation >= rbs[i-1].Epoch.Generation {
				t.Errorf("not newest first: %v after %v", rb.Epoch, rbs[i-1].Epoch)
			}
			for _, m := range rb.Moves {
				if m.To == id {
					placed = append(placed, m.Unit)
				}
			}
			// The table shows the same entry with the number of its moves.
			if r := row(t, out, rb.Epoch.String()); r[len(r)-2] != strconv.Itoa(len(rb.Moves)) {
				t.Errorf("%v: %d moves, table row %q", rb.Epoch, len(rb.Moves), r)
			}
		}
		slices.Sort(placed)
		if want := slices.Sorted(slices.Values(units)); !slices.Equal(placed, want) {
			t.Errorf("the journal placed %v, want %v", placed, want)
		}
		decode(t, ok(t, url, "rebalance", "history", "--limit", "1", "-o", "json"), &rbs)
		if len(rbs) != 1 {
			t.Errorf("--limit 1: %d entries", len(rbs))
		}
		if name := ok(t, url, "rebalance", "history", "--limit", "1", "-o", "name"); name != "rebalance/"+rbs[0].Epoch.String()+"\n" {
			t.Errorf("name: %q", name)
		}
	})

	t.Run("worker weight", func(t *testing.T) {
		if out := ok(t, url, "worker", "weight", id, "2.5"); out != "worker/"+id+" weight set to 2.5\n" {
			t.Errorf("out %q", out)
		}
		if r := row(t, ok(t, url, "worker", "list"), id); r[3] != "2.5" {
			t.Errorf("list after weight 2.5: %q", r)
		}
		var s workerSettings
		decode(t, ok(t, url, "worker", "weight", id, "1", "-o", "json"), &s)
		if s.Worker != id || s.Weight == nil || *s.Weight != 1 || s.Draining {
			t.Errorf("json: %+v", s)
		}
		if ws := workers(t, url); ws[0].Weight != 1 {
			t.Errorf("list after weight 1: %+v", ws)
		}
	})

	t.Run("worker drain", func(t *testing.T) {
		var before []restapi.AssignmentView
		getJSON(t, url+"/kcd/v1/assignments", &before)

		code, out, errOut := kcctl(t, "--server", url, "worker", "drain", id, "--dry-run")
		if code != 0 || !strings.HasPrefix(out, "draining "+id+" would move 4 units:\n") || !strings.HasSuffix(out, "worker/"+id+" not changed (dry run)\n") {
			t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
		}
		// UNIT FROM TO: a single worker has nowhere to send its units.
		for _, u := range units {
			if r := row(t, out, u); r[1] != id || r[2] != "<none>" {
				t.Errorf("%s: %q", u, r)
			}
		}
		if !strings.Contains(errOut, "no worker can take 4 of these units") {
			t.Errorf("no warning about units without a place: %q", errOut)
		}
		var res drainResult
		decode(t, ok(t, url, "worker", "drain", id, "--dry-run", "-o", "json"), &res)
		if !res.DryRun || res.Draining || res.Plan.Drain != id || len(res.Plan.Moves) != 4 {
			t.Errorf("json: %+v", res)
		}
		if ws := workers(t, url); ws[0].Draining {
			t.Errorf("a dry run drained the worker: %+v", ws)
		}
		var after []restapi.AssignmentView
		getJSON(t, url+"/kcd/v1/assignments", &after)
		if !slices.EqualFunc(before, after, func(a, b restapi.AssignmentView) bool { return a.Worker == b.Worker && a.RevokingTo == b.RevokingTo }) {
			t.Errorf("a dry run changed the assignments: %+v → %+v", before, after)
		}

		out = ok(t, url, "worker", "drain", id)
		if !strings.HasPrefix(out, "draining "+id+" moves 4 units:\n") || !strings.HasSuffix(out, "worker/"+id+" draining\n") {
			t.Errorf("drain:\n%s", out)
		}
		if r := row(t, ok(t, url, "worker", "list"), id); r[1] != "draining" || r[4] != "true" {
			t.Errorf("list after drain: %q", r)
		}
		var p coordinator.PlanResult
		decode(t, ok(t, url, "rebalance", "plan", "-o", "json"), &p)
		if len(p.Shares) != 1 || p.Shares[0].Weight != 0 || p.Shares[0].After != 0 {
			t.Errorf("plan of a drained worker: %+v", p)
		}

		if out := ok(t, url, "worker", "undrain", id); out != "worker/"+id+" undrained\n" {
			t.Errorf("undrain: %q", out)
		}
		if ws := workers(t, url); ws[0].Draining {
			t.Errorf("still draining: %+v", ws)
		}
		decode(t, ok(t, url, "rebalance", "plan", "-o", "json"), &p)
		if len(p.Moves) != 0 || p.Shares[0].After != 4 {
			t.Errorf("plan after undrain: %+v", p)
		}
	})

	t.Run("unknown worker", func(t *testing.T) {
		// An id the cluster does not know is refused: a typo must not store
		// a setting nobody uses.
		for _, args := range [][]string{{"worker", "drain", "nobody:1"}, {"worker", "weight", "nobody:1", "2"}} {
			code, out, errOut := kcctl(t, append([]string{"--server", url}, args...)...)
			if code != exitNotFound || out != "" || !strings.Contains(errOut, `Error: no worker "nobody:1" is known`) || !strings.Contains(errOut, "--force") {
				t.Errorf("%v: exit %d, out %q, stderr %q", args, code, out, errOut)
			}
		}
		// With --force, a worker not joined yet can be drained before it
		// comes: it takes no work when it joins.
		code, out, errOut := kcctl(t, "--server", url, "worker", "drain", "nobody:1", "--force")
		if code != 0 || !strings.Contains(out, "draining nobody:1 moves nothing") || !strings.Contains(errOut, `Warning: no worker "nobody:1" is known`) {
			t.Errorf("drain: exit %d, out %q, stderr %q", code, out, errOut)
		}
		var ws []restapi.WorkerView
		getJSON(t, url+"/kcd/v1/workers", &ws)
		for _, w := range ws {
			if w.Draining {
				t.Errorf("draining a down worker drained %s", w.ID)
			}
		}
		// Settings outlive sessions, so the API takes any id: kcctl warns.
		code, _, errOut = kcctl(t, "--server", url, "worker", "undrain", "nobody:1")
		if code != 0 || !strings.Contains(errOut, `Warning: no worker "nobody:1" has a session now`) {
			t.Errorf("undrain: exit %d, stderr %q", code, errOut)
		}
	})
}

// Bad input is refused before anything is sent: the server here is not
// even reachable.
func TestCoordinatorCommandsUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"worker", "weight", "w1", "-1"},
		{"worker", "weight", "w1", "-0.5"},
		{"worker", "weight", "w1", "many"},
		{"worker", "weight", "w1", "NaN"},
		{"worker", "weight", "w1", "+Inf"},
		{"worker", "weight", "w1"},
		{"worker", "drain"},
		{"worker", "list", "extra"},
		{"worker", "nope"},
		{"rebalance", "history", "--limit", "-1"},
		{"rebalance", "history", "--limit", "x"},
		{"assignments", "-o", "xml"},
	} {
		code, out, errOut := kcctl(t, append([]string{"--server", "http://127.0.0.1:1"}, args...)...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, "Error: ") || strings.Contains(errOut, "connect") {
			t.Errorf("%v: exit %d, out %q, stderr %q", args, code, out, errOut)
		}
		if args[1] == "weight" && len(args) == 4 && !strings.Contains(errOut, "worker weight must be a number from 0 up, got") {
			t.Errorf("%v: stderr %q", args, errOut)
		}
	}
	code, _, errOut := kcctl(t, "--server", "http://127.0.0.1:1", "worker", "list")
	if code != exitError || !strings.Contains(errOut, "cannot reach the server at http://127.0.0.1:1: connection refused") {
		t.Errorf("unreachable: exit %d, stderr %q", code, errOut)
	}
}
