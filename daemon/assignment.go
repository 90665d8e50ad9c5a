package daemon

import (
	"context"
	"time"

	"github.com/kcd-project/kcd/daemon/connectstore"
	"github.com/kcd-project/kcd/raft"
)

// leaderAssignment runs every connector and task on the Raft leader's worker
// and none elsewhere: with several raft+worker nodes, each connector then
// runs exactly once. It is the stand-in until the coordinator spreads the
// work over all workers; a leader that loses its leadership stops its tasks
// within the check interval plus raft's own step-down (CheckQuorum).
type leaderAssignment struct {
	r       *raft.Node
	changed chan struct{}
}

func newLeaderAssignment(ctx context.Context, r *raft.Node) *leaderAssignment {
	a := &leaderAssignment{r: r, changed: make(chan struct{}, 1)}
	go a.watch(ctx)
	return a
}

func (a *leaderAssignment) watch(ctx context.Context) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	was := a.r.IsLeader()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.r.Done():
			if was {
				was = false
				a.signal()
			}
			return
		case <-tick.C:
		}
		if is := a.r.IsLeader(); is != was {
			was = is
			a.signal()
		}
	}
}

func (a *leaderAssignment) signal() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// Connector implements worker.Assignment.
func (a *leaderAssignment) Connector(string) bool { return a.r.IsLeader() }

// Task implements worker.Assignment.
func (a *leaderAssignment) Task(string, int) bool { return a.r.IsLeader() }

// Changed implements worker.Assignment.
func (a *leaderAssignment) Changed() <-chan struct{} { return a.changed }

// Fence implements worker.Assignment: the stand-in writes unfenced.
func (a *leaderAssignment) Fence(string, int) connectstore.Fence { return nil }
