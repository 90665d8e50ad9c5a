package api

import (
	"fmt"
	"strconv"
	"time"
)

// The rebalance journal (GET /kcd/v1/rebalances) and plans
// (GET /kcd/v1/rebalances/plan).

// Epoch says which coordinator made an assignment: the Raft term it led
// in and the generation of the assignment (one more per rebalance).
type Epoch struct {
	Term       uint64 `json:"term"`
	Generation int64  `json:"generation"`
}

func (e Epoch) String() string { return fmt.Sprintf("%d.%d", e.Term, e.Generation) }

// UnitName names a connector instance (task < 0) "name/connector" and a
// task "name/3", as Move.Unit does.
func UnitName(connector string, task int) string {
	if task < 0 {
		return connector + "/connector"
	}
	return connector + "/" + strconv.Itoa(task)
}

// Move is one unit changing owner in a rebalance.
type Move struct {
	Unit string `json:"unit"`
	From string `json:"from"`
	To   string `json:"to"`
	// Revoke: the move waits for From to stop the unit first.
	Revoke bool `json:"revoke,omitempty"`
}

// Rebalance is one entry of the journal.
type Rebalance struct {
	Epoch      Epoch     `json:"epoch"`
	Leader     uint64    `json:"leader"`
	At         time.Time `json:"at"`
	Triggers   []string  `json:"triggers"`
	Moves      []Move    `json:"moves"`
	Units      int       `json:"units"`
	Workers    int       `json:"workers"`
	DurationMS float64   `json:"duration_ms"`
}

// PlanResult is what the assignor would do now: the answer of
// GET /kcd/v1/rebalances/plan.
type PlanResult struct {
	Epoch  Epoch       `json:"epoch"`
	Drain  string      `json:"drain,omitempty"`
	Moves  []Move      `json:"moves"`
	Shares []PlanShare `json:"shares"`
}

// PlanShare is one worker's share in a plan.
type PlanShare struct {
	Worker string  `json:"worker"`
	Weight float64 `json:"weight"`
	Quota  int     `json:"quota"`
	Before int     `json:"before"`
	After  int     `json:"after"`
}
