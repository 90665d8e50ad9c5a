package daemon

import (
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
	for _, t := range n.worker.Stats().Tasks {
		records[t.ID] = t.Records
	}
	for id, starts := range n.worker.Starts() {
		u := restapi.LocalUnit{Connector: id.Connector, Running: running[id], Starts: starts, Records: records[id]}
		if id.Task >= 0 {
			t := id.Task
			u.Task = &t
		}
		v.Units = append(v.Units, u)
	}
	return v
}
