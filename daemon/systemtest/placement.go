package systemtest

import (
	"context"
	"time"

	"github.com/kcd-project/kcd/api"
)

// localWorker is GET /kcd/v1/worker.
type localWorker struct {
	Units []struct {
		Task    *int `json:"task"`
		Running bool `json:"running"`
		Starts  int  `json:"starts"`
	} `json:"units"`
}

// UnitsOf returns the tasks node n's worker runs now and every task's start
// count there.
func UnitsOf(ctx context.Context, n *Node) (running map[int]bool, starts map[int]int, err error) {
	var w localWorker
	if err := n.GetJSON(ctx, "/kcd/v1/worker", &w); err != nil {
		return nil, nil, err
	}
	running, starts = map[int]bool{}, map[int]int{}
	for _, u := range w.Units {
		if u.Task == nil {
			continue
		}
		starts[*u.Task] = u.Starts
		if u.Running {
			running[*u.Task] = true
		}
	}
	return running, starts, nil
}

// Placement is where the tasks of the connector "gen" run, as the nodes
// themselves say.
type Placement struct {
	Where    map[int]*Node         // task → the node running it
	Starts   map[*Node]map[int]int // node → task → how often it started there
	Balanced bool                  // the coordinator has no move left to make
}

// Count is how many tasks run on n.
func (p Placement) Count(n *Node) int {
	c := 0
	for _, m := range p.Where {
		if m == n {
			c++
		}
	}
	return c
}

// ReadPlacement reads the placement once; ok is false unless every one of
// the tasks runs on exactly one of nodes and reports RUNNING from it.
func ReadPlacement(ctx context.Context, via *Node, nodes []*Node, tasks int) (p Placement, ok bool) {
	p = Placement{Where: map[int]*Node{}, Starts: map[*Node]map[int]int{}}
	for _, n := range nodes {
		running, starts, err := UnitsOf(ctx, n)
		if err != nil {
			return p, false
		}
		p.Starts[n] = starts
		for id := range running {
			if p.Where[id] != nil {
				return p, false // twice
			}
			p.Where[id] = n
		}
	}
	if len(p.Where) != tasks {
		return p, false
	}
	var st api.ConnectorStateInfo
	if err := via.GetJSON(ctx, "/connectors/gen/status", &st); err != nil || len(st.Tasks) != tasks {
		return p, false
	}
	for _, t := range st.Tasks {
		if t.State != "RUNNING" || p.Where[t.ID] == nil || t.WorkerID != p.Where[t.ID].RESTAddr {
			return p, false
		}
	}
	var plan struct {
		Moves []any `json:"moves"`
	}
	p.Balanced = via.GetJSON(ctx, "/kcd/v1/rebalances/plan", &plan) == nil && len(plan.Moves) == 0
	return p, true
}

// WaitPlacement waits up to a minute until ReadPlacement succeeds and cond
// (if any) holds, polling every 20 ms.
func WaitPlacement(ctx context.Context, via *Node, nodes []*Node, tasks int, cond func(Placement) bool) (Placement, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var p Placement
	err := WaitFor(ctx, 20*time.Millisecond, func() (bool, error) {
		var ok bool
		p, ok = ReadPlacement(ctx, via, nodes, tasks)
		return ok && (cond == nil || cond(p)), nil
	})
	return p, err
}

// Restarted counts tasks that ran on the same node before and after and
// were started again in between, leaving out the node skip.
func Restarted(before, after Placement, skip *Node) int {
	n := 0
	for id, w := range before.Where {
		if w == skip || after.Where[id] != w {
			continue
		}
		if after.Starts[w][id] != before.Starts[w][id] {
			n++
		}
	}
	return n
}

// WorkerState is one worker in GET /kcd/v1/workers.
type WorkerState struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	Connectors int    `json:"connectors"`
	Tasks      int    `json:"tasks"`
}

// Workers reads GET /kcd/v1/workers from via.
func Workers(ctx context.Context, via *Node) ([]WorkerState, error) {
	var ws []WorkerState
	err := via.GetJSON(ctx, "/kcd/v1/workers", &ws)
	return ws, err
}

// AliveWorkers counts the workers that hold a session (alive or
// draining; a kcd without states lists only those), as via lists them.
func AliveWorkers(ctx context.Context, via *Node) (int, error) {
	ws, err := Workers(ctx, via)
	n := 0
	for _, w := range ws {
		if w.State == "alive" || w.State == "draining" || w.State == "" {
			n++
		}
	}
	return n, err
}
