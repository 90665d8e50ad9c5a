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
	"github.com/kcd-project/kcd/daemon/devkafka"
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
	log := testLogger(t)
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

// testLogger discards the nodes' logs, or writes them to $KCD_TEST_LOG.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	f := os.Getenv("KCD_TEST_LOG")
	if f == "" {
		return slog.New(slog.DiscardHandler)
	}
	out, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close() })
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
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

// A kill of the Raft leader, a raft-only node, moves and restarts nothing
// on the worker-only nodes: the new leader's coordinator carries on with
// the assignment as it is. Three of the workers carry the Raft members'
// node ids, as the scale benchmark's did (all had the default, 1) and
// nothing refuses: the leader's reduced share is for the worker in its own
// process, so it shrinks none of them under the old leader and moves
// nothing back when the new one takes over.
func TestLeaderKillMovesNothingOnLiveWorkers(t *testing.T) {
	log := testLogger(t)
	broker, err := devkafka.Start(t.TempDir(), 0, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(broker.Close)
	base := func() config.Config {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		cfg.RESTAddr = "127.0.0.1:0"
		cfg.BootstrapServers = broker.Addrs()
		cfg.JoinToken = "daemon-test-join-token"
		return cfg
	}
	start := func(cfg config.Config) *Node {
		t.Helper()
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		n := New(cfg, log)
		if err := n.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	var peers, members, seeds []string
	for i := range 3 {
		a, err := testenv.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, a)
		members = append(members, fmt.Sprintf("%d=%s", i+1, a))
	}
	var rafts []*Node
	for i := range 3 {
		cfg := base()
		cfg.Roles = []string{config.RoleRaft}
		cfg.NodeID = uint64(i + 1)
		cfg.PeerAddr = peers[i]
		cfg.InitialCluster = strings.Join(members, ",")
		n := start(cfg)
		rafts = append(rafts, n)
		seeds = append(seeds, n.RESTURL())
	}
	var workers []*Node
	for _, id := range []uint64{1, 2, 3, 11, 12, 13} {
		cfg := base()
		cfg.Roles = []string{config.RoleWorker}
		cfg.NodeID = id
		cfg.Seeds = seeds
		workers = append(workers, start(cfg))
	}
	api := rafts[0].RESTURL()
	waitFor(t, "six workers did not register", func() bool {
		var ws []restapi.WorkerView
		return call(t, "GET", api+"/kcd/v1/workers", nil, &ws) == 200 && len(ws) == len(workers)
	})
	const conns, tasks = 5, 10
	for i := range conns {
		if code := call(t, "POST", api+"/connectors", map[string]any{"name": fmt.Sprintf("gen-%d", i), "config": map[string]string{
			"connector.class": "Datagen", "topic": "gen", "tasks.max": fmt.Sprint(tasks), "max.records": "1"}}, nil); code != 201 {
			t.Fatalf("create gen-%d: %d", i, code)
		}
	}
	const units = conns * (tasks + 1)
	// settled waits until the coordinator behind api has nothing to move
	// and every unit runs on exactly one worker.
	settled := func(what, api string) (map[string][]string, map[string]int) {
		t.Helper()
		var runs map[string][]string
		var starts map[string]int
		deadline := time.Now().Add(60 * time.Second)
		for {
			runs, starts = placement(t, workers)
			count := map[string]int{}
			for _, us := range runs {
				for _, u := range us {
					count[u]++
				}
			}
			ok := len(count) == units && balanced(t, api)
			for _, c := range count {
				ok = ok && c == 1
			}
			if ok {
				return runs, starts
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: units did not settle: %v", what, runs)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	before, startsBefore := settled("start", api)
	// No raft-only leader has a worker of its own: every worker holds the
	// floor or the ceiling of an even share.
	for _, w := range workers {
		if n := len(before[w.workerID()]); n < units/len(workers) || n > (units+len(workers)-1)/len(workers) {
			t.Errorf("worker %s (node id %d) runs %d units, not an even share of %d over %d workers", w.workerID(), w.cfg.NodeID, n, units, len(workers))
		}
	}

	var old *Node
	for _, n := range rafts {
		if n.Raft().IsLeader() {
			old = n
		}
	}
	if old == nil {
		t.Fatal("no leader")
	}
	term := old.Raft().Term()
	old.Kill()
	var next *Node
	waitFor(t, "no new leader after the kill", func() bool {
		for _, n := range rafts {
			if n != old && n.Raft().IsLeader() && n.Raft().Term() > term {
				next = n
				return true
			}
		}
		return false
	})
	// Every worker has heartbeated the new coordinator (its sessions
	// carried over from the old one are all confirmed: it moves whatever
	// it wants to move now), and it has nothing left to move.
	waitFor(t, "not every worker heard from the new coordinator", func() bool {
		for _, w := range workers {
			if epoch, _, _, _ := w.member.Rebalances(); epoch.Term <= term {
				return false
			}
		}
		return true
	})
	after, startsAfter := settled("after the leader kill", next.RESTURL())
	moved, restarted := 0, 0
	for w, us := range before {
		for _, u := range us {
			switch {
			case !slices.Contains(after[w], u):
				moved++
				t.Errorf("%s moved off %s, a live worker", u, w)
			case startsAfter[w+" "+u] != startsBefore[w+" "+u]:
				restarted++
				t.Errorf("%s restarted on %s (starts %d → %d)", u, w, startsBefore[w+" "+u], startsAfter[w+" "+u])
			}
		}
	}
	if moved+restarted > 0 {
		t.Errorf("leader %d killed, %d leads: %d of %d units moved off live workers, %d restarted on them", old.cfg.NodeID, next.cfg.NodeID, moved, units, restarted)
	}
}
