package daemon

import (
	"testing"

	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/daemon/worker"
)

// The node's in-flight settings default to the worker's own defaults, and
// reach the worker as given.
func TestWorkerLimitsFromConfig(t *testing.T) {
	n := &Node{cfg: config.Default()}
	if got, want := n.workerLimits(), worker.Default().Limits; got != want {
		t.Errorf("default limits %+v, want the worker's %+v", got, want)
	}
	n.cfg.WorkerInFlightBytes, n.cfg.WorkerInFlightRecords = 256<<20, 400_000
	n.cfg.TaskInFlightBytes, n.cfg.TaskInFlightRecords = 16<<20, 2000
	l := n.workerLimits()
	if l.WorkerInFlightBytes != 256<<20 || l.WorkerInFlightRecords != 400_000 || l.TaskInFlightBytes != 16<<20 || l.TaskInFlightRecords != 2000 {
		t.Errorf("limits %+v", l)
	}
	if l.SinkMaxBatch != worker.Default().Limits.SinkMaxBatch {
		t.Errorf("the other limits must keep their defaults: %+v", l)
	}
}
