package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/internal/testenv"
)

// coordCluster starts three raft+worker nodes in this process, each with
// its own embedded dev broker (the tasks' data goes nowhere that matters
// here: this is about who runs what).
func coordCluster(t *testing.T, tune ...func(*config.Config)) []*Node {
	t.Helper()
	var peers, members []string
	for i := range 3 {
		a, err := testenv.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, a)
		members = append(members, fmt.Sprintf("%d=%s", i+1, a))
	}
	log := slog.New(slog.DiscardHandler)
	if f := os.Getenv("KCD_TEST_LOG"); f != "" {
		out, err := os.Create(f)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { out.Close() })
		log = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	var nodes []*Node
	for i := range 3 {
		cfg := devConfig(t, t.TempDir())
		cfg.NodeID = uint64(i + 1)
		cfg.PeerAddr = peers[i]
		cfg.InitialCluster = strings.Join(members, ",")
		for _, f := range tune {
			f(&cfg)
		}
		n := New(cfg, log)
		if err := n.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
		t.Cleanup(func() { n.Close() })
	}
	return nodes
}

func call(t *testing.T, method, url string, body any, out any) int {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	if out != nil && res.StatusCode < 300 {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, url, err)
		}
	}
	return res.StatusCode
}

type connStatus struct {
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"tasks"`
}

// placement maps each worker to the units it runs now, as the nodes
// themselves say (GET /kcd/v1/worker); starts maps "worker unit" to
// how often it was started there.
func placement(t *testing.T, nodes []*Node) (map[string][]string, map[string]int) {
	t.Helper()
	runs := map[string][]string{}
	starts := map[string]int{}
	for _, n := range nodes {
		if n == nil {
			continue
		}
		var v restapi.LocalWorkerView
		if call(t, "GET", n.RESTURL()+"/kcd/v1/worker", nil, &v) != 200 {
			t.Fatalf("GET /kcd/v1/worker of %s failed", n.RESTURL())
		}
		for _, u := range v.Units {
			name := u.Connector + "/connector"
			if u.Task != nil {
				name = fmt.Sprintf("%s/%d", u.Connector, *u.Task)
			}
			starts[v.ID+" "+name] = u.Starts
			if u.Running {
				runs[v.ID] = append(runs[v.ID], name)
			}
		}
	}
	return runs, starts
}

// balanced tells whether the coordinator has nothing left to move: its
// plan is empty and no revoke is pending.
func balanced(t *testing.T, api string) bool {
	t.Helper()
	var plan struct {
		Moves []any `json:"moves"`
	}
	if call(t, "GET", api+"/kcd/v1/rebalances/plan", nil, &plan) != 200 || len(plan.Moves) > 0 {
		return false
	}
	var as []restapi.AssignmentView
	if call(t, "GET", api+"/kcd/v1/assignments", nil, &as) != 200 {
		return false
	}
	for _, a := range as {
		if a.RevokingTo != "" {
			return false
		}
	}
	return true
}

// settle waits until the coordinator is done moving and every one of the
// connector's tasks runs exactly once over the nodes (and its status says
// RUNNING), and returns the placement.
func settle(t *testing.T, nodes []*Node, api string, tasks int, what string) (map[string][]string, map[string]int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, starts := placement(t, nodes)
		count := map[string]int{}
		for _, units := range runs {
			for _, u := range units {
				count[u]++
			}
		}
		var st connStatus
		ok := call(t, "GET", api+"/connectors/gen/status", nil, &st) == 200 && len(st.Tasks) == tasks
		for _, task := range st.Tasks {
			ok = ok && task.State == "RUNNING"
		}
		ok = ok && len(count) == tasks+1 && balanced(t, api)
		for _, c := range count {
			ok = ok && c == 1
		}
		if ok {
			return runs, starts
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: tasks did not settle: running %v, status %+v", what, runs, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unchanged fails when a unit that ran on a worker before ran there after
// with more starts: a task on an unaffected worker was stopped.
func unchanged(t *testing.T, what string, before map[string][]string, startsBefore map[string]int, after map[string][]string, startsAfter map[string]int, skip string) {
	t.Helper()
	for w, units := range before {
		if w == skip {
			continue
		}
		for _, u := range units {
			if !slices.Contains(after[w], u) {
				continue // moved away (allowed only when it had to)
			}
			if startsAfter[w+" "+u] != startsBefore[w+" "+u] {
				t.Errorf("%s: %s was restarted on %s (starts %d → %d)", what, u, w, startsBefore[w+" "+u], startsAfter[w+" "+u])
			}
		}
	}
}

func TestCoordinatorSpreadsWeighsDrainsAndMovesOnlyWhatMust(t *testing.T) {
	nodes := coordCluster(t)
	api := nodes[0].RESTURL()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ws []restapi.WorkerView
		if call(t, "GET", api+"/kcd/v1/workers", nil, &ws) == 200 && len(ws) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("three workers did not register: %v", ws)
		}
	}
	const tasks = 12
	if code := call(t, "POST", api+"/connectors", map[string]any{"name": "gen", "config": map[string]string{
		"connector.class": "Datagen", "topic": "gen", "tasks.max": fmt.Sprint(tasks), "rate.per.task": "20"}}, nil); code != 201 {
		t.Fatalf("create connector: %d", code)
	}
	runs, starts := settle(t, nodes, api, tasks, "start")

	// Shares: the leader's worker carries at most half of what an average
	// other worker does (plus one for rounding); every worker has work.
	var leaderWorker string
	for _, n := range nodes {
		if n.Raft().IsLeader() {
			leaderWorker = n.workerID()
		}
	}
	if leaderWorker == "" {
		t.Fatal("no leader")
	}
	others := 0
	for w, units := range runs {
		if w != leaderWorker {
			others += len(units)
		}
	}
	if len(runs) != 3 {
		t.Fatalf("work not spread over the three workers: %v", runs)
	}
	if l := len(runs[leaderWorker]); float64(l) > float64(others)/2/2+1 {
		t.Fatalf("leader's worker runs %d units, others %d in all: more than half an average share", l, others)
	}

	// Drain a worker that is not the leader's: only its units move; the
	// others' keep running.
	var drained *Node
	for _, n := range nodes {
		if n.workerID() != leaderWorker {
			drained = n
			break
		}
	}
	id := drained.workerID()
	if code := call(t, "PUT", api+"/kcd/v1/workers/"+id+"/drain", nil, nil); code != 200 {
		t.Fatalf("drain: %d", code)
	}
	runs2, starts2 := settle(t, nodes, api, tasks, "drain")
	if len(runs2[id]) != 0 {
		t.Fatalf("drained worker still runs %v", runs2[id])
	}
	unchanged(t, "drain", runs, starts, runs2, starts2, id)

	// Undrain: it gets a share back; units stay put elsewhere unless moved.
	if code := call(t, "PUT", api+"/kcd/v1/workers/"+id+"/undrain", nil, nil); code != 200 {
		t.Fatalf("undrain: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	var runs3 map[string][]string
	var starts3 map[string]int
	for {
		runs3, starts3 = settle(t, nodes, api, tasks, "undrain")
		if len(runs3[id]) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("undrained worker got nothing back: %v", runs3)
		}
		time.Sleep(100 * time.Millisecond)
	}
	unchanged(t, "undrain", runs2, starts2, runs3, starts3, id)

	// A clean stop of a worker: its units move at once, nobody else's
	// restart.
	drained.Close()
	live := []*Node{}
	for _, n := range nodes {
		if n != drained {
			live = append(live, n)
		}
	}
	runs4, starts4 := settle(t, live, live[0].RESTURL(), tasks, "leave")
	unchanged(t, "leave", runs3, starts3, runs4, starts4, id)
	// The worker list keeps it, as left, owning nothing.
	var ws []restapi.WorkerView
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ws = nil
		call(t, "GET", live[1].RESTURL()+"/kcd/v1/workers", nil, &ws)
		if len(ws) == 3 && ws[2].ID == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker that left is not listed last: %+v", ws)
		}
	}
	if w := ws[2]; w.State != "left" || w.GoneAt == nil || w.Connectors+w.Tasks != 0 || ws[0].State != "alive" || ws[1].State != "alive" {
		t.Errorf("worker list after %s left: %+v", id, ws)
	}

	// The journal tells what happened.
	var journal []struct {
		Triggers []string `json:"triggers"`
		Moves    []struct {
			Unit, From, To string
		} `json:"moves"`
	}
	if code := call(t, "GET", live[0].RESTURL()+"/kcd/v1/rebalances", nil, &journal); code != 200 {
		t.Fatalf("journal: %d", code)
	}
	all := ""
	for _, j := range journal {
		all += strings.Join(j.Triggers, ";") + ";"
	}
	for _, want := range []string{"tasks changed: gen", "worker settings changed: " + id, "worker left: " + id} {
		if !strings.Contains(all, want) {
			t.Errorf("journal lacks trigger %q: %s", want, all)
		}
	}
}

// With --rebalance-delay, the units of a worker that stopped (a rolling
// restart) wait for it; they move once the delay has passed.
func TestRebalanceDelayKeepsADepartedWorkersUnitsWaiting(t *testing.T) {
	const delay = 4 * time.Second
	nodes := coordCluster(t, func(c *config.Config) { c.RebalanceDelay = delay })
	api := nodes[0].RESTURL()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var ws []restapi.WorkerView
		if call(t, "GET", api+"/kcd/v1/workers", nil, &ws) == 200 && len(ws) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("three workers did not register: %v", ws)
		}
	}
	const tasks = 6
	if code := call(t, "POST", api+"/connectors", map[string]any{"name": "gen", "config": map[string]string{
		"connector.class": "Datagen", "topic": "gen", "tasks.max": fmt.Sprint(tasks), "rate.per.task": "20"}}, nil); code != 201 {
		t.Fatalf("create connector: %d", code)
	}
	runs, _ := settle(t, nodes, api, tasks, "start")
	var gone *Node
	for _, n := range nodes {
		if !n.Raft().IsLeader() && len(runs[n.workerID()]) > 0 {
			gone = n
			break
		}
	}
	if gone == nil {
		t.Fatalf("no follower runs anything: %v", runs)
	}
	held := runs[gone.workerID()]
	var live []*Node
	for _, n := range nodes {
		if n != gone {
			live = append(live, n)
		}
	}
	stopped := time.Now() // its session ends during Close
	gone.Close()

	// Within the delay its units run nowhere and still name it.
	time.Sleep(delay / 4)
	now, _ := placement(t, live)
	for _, units := range now {
		for _, u := range units {
			if slices.Contains(held, u) {
				t.Fatalf("%s moved %v after the worker stopped, within the delay of %v", u, time.Since(stopped), delay)
			}
		}
	}
	// After it, they run on the others.
	settle(t, live, live[0].RESTURL(), tasks, "after the delay")
	if took := time.Since(stopped); took < delay {
		t.Fatalf("units moved after %v, before the delay of %v", took, delay)
	}
}

// Kill stops a node as kill -9 would: it hands nothing over (the others
// elect a leader of a later term), its REST API is gone, and its worker
// runs nothing any more.
func TestKillStopsTheNodeWithoutHandover(t *testing.T) {
	nodes := coordCluster(t)
	leader := func(except *Node) *Node {
		for _, n := range nodes {
			if n != except && n.Raft().IsLeader() {
				return n
			}
		}
		return nil
	}
	var lead *Node
	waitFor(t, "no leader", func() bool { lead = leader(nil); return lead != nil })
	term := lead.Raft().Term()
	url := lead.RESTURL()
	lead.Kill()
	select {
	case <-lead.workerDone:
	default:
		t.Error("the killed node's worker still runs")
	}
	if res, err := http.Get(url + "/"); err == nil {
		res.Body.Close()
		t.Errorf("the killed node's REST API still answers: %s", res.Status)
	}
	var next *Node
	waitFor(t, "no new leader after the kill", func() bool { next = leader(lead); return next != nil })
	if next.Raft().Term() <= term {
		t.Fatalf("new leader at term %d, the killed one led term %d", next.Raft().Term(), term)
	}
}
