package daemon

import (
	"context"
	"fmt"
	"time"

	"github.com/kcd-project/kcd/daemon/coordinator"
	"github.com/kcd-project/kcd/daemon/restapi"
	"github.com/kcd-project/kcd/daemon/worker"
)

// LocalWorker implements restapi.LocalWorker: what this node's worker runs
// and how often it started each unit.
func (n *Node) LocalWorker() restapi.LocalWorkerView {
	v := restapi.LocalWorkerView{ID: n.workerID(), SessionHeld: n.member.Alive(), Units: []restapi.LocalUnit{}}
	running := map[worker.TaskID]bool{}
	for _, id := range n.worker.Running() {
		running[id] = true
	}
	records := map[worker.TaskID]int64{}
	lags := map[worker.TaskID]int64{}
	for _, t := range n.worker.Stats().Tasks {
		records[t.ID] = t.Records
		if t.Sink && t.Lag >= 0 {
			lags[t.ID] = t.Lag
		}
	}
	for id, starts := range n.worker.Starts() {
		u := restapi.LocalUnit{Connector: id.Connector, Running: running[id], Starts: starts, Records: records[id]}
		if l, ok := lags[id]; ok && running[id] {
			u.Lag = &l
		}
		if id.Task >= 0 {
			t := id.Task
			u.Task = &t
		}
		v.Units = append(v.Units, u)
	}
	return v
}

// unitOwners reads who owns each unit of a connector and whether the
// owner holds a session, for the herder's statuses.
func (n *Node) unitOwners(ctx context.Context, name string) (map[int]coordinator.UnitOwner, int64, error) {
	return coordinator.Owners(ctx, n.store, name)
}

// workerHealth is the health check of the node's worker: it fails while the
// worker holds no session with the coordinator, for it then runs nothing.
func (n *Node) workerHealth() *restapi.HealthProblem {
	held, last := n.member.Session()
	switch {
	case held:
		return nil
	case last.IsZero():
		return &restapi.HealthProblem{Starting: true, Message: "Worker has not joined the cluster yet: the coordinator has answered none of its heartbeats."}
	}
	return &restapi.HealthProblem{Message: fmt.Sprintf("Worker has lost its session with the coordinator: the last heartbeat it answered was sent %v ago (session timeout %v), so this worker runs no connector or task until the coordinator answers again.",
		time.Since(last).Round(100*time.Millisecond), n.cfg.SessionTimeout)}
}
