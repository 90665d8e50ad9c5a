package worker

import (
	"cmp"
	"slices"

	"github.com/kcd-project/kcd/daemon/connect"
	"github.com/kcd-project/kcd/daemon/connectstore"
)

// releaser is an Assignment that tells a task being handed over (revoked,
// but this worker's under a held session until its run stops) from one
// that is lost: the stopping run may commit what it sent.
type releaser interface {
	Releasing(name string, id int) bool
}

// releasing tells whether task id of connector name is being handed over
// by this worker (false when the Assignment cannot tell).
func releasing(a Assignment, name string, id int) bool {
	r, ok := a.(releaser)
	return ok && r.Releasing(name, id)
}

// changeTeller is an Assignment that tells which connectors' answers
// changed since it last told (all: any may have), so that a change makes
// the worker look again at those connectors only.
type changeTeller interface {
	TakeChanged() (connectors []string, all bool)
}

// changedConnectors returns the connectors whose answers changed since
// the last call; ok is false when any may have (or a cannot tell).
func changedConnectors(a Assignment) (names []string, ok bool) {
	t, can := a.(changeTeller)
	if !can {
		return nil, false
	}
	names, all := t.TakeChanged()
	return names, !all
}

// holder is an Assignment that tells which connectors have a unit on this
// worker, so that the worker follows only those: a supervisor, and its
// reads of the store, exist only for a connector whose instance or some
// task is this worker's. Without it the worker follows every connector.
type holder interface {
	// Holds tells whether a unit of connector name (its instance or a
	// task) is this worker's in the assignment, running or not (a lapsed
	// session, a unit being handed over).
	Holds(name string) bool
	// Held lists the connectors Holds is true of.
	Held() []string
}

// Assignment decides which connectors and tasks run on this worker. A
// single worker runs all of them (All); the coordinator will hand each
// worker its share through an implementation of its own.
type Assignment interface {
	// Connector tells whether the connector instance of name (the part
	// that calls TaskConfigs) runs here.
	Connector(name string) bool
	// Task tells whether task id of connector name runs here.
	Task(name string, id int) bool
	// Changed is signalled whenever the answers may have changed; nil if
	// they never do.
	Changed() <-chan struct{}
	// Fence is the claim under which this worker writes the statuses,
	// offsets and task configs of connector name (task -1) or of one of
	// its tasks; the store refuses those writes once the claim is gone.
	Fence(name string, task int) connectstore.Fence
}

// All runs every connector and task on this worker.
type All struct{}

// Connector implements Assignment.
func (All) Connector(string) bool { return true }

// Task implements Assignment.
func (All) Task(string, int) bool { return true }

// Changed implements Assignment.
func (All) Changed() <-chan struct{} { return nil }

// Fence implements Assignment: a lone worker writes unfenced.
func (All) Fence(string, int) connectstore.Fence { return nil }

// SplitPartitions spreads a sink connector's partitions over its tasks:
// sorted by topic and partition, the i-th goes to task i mod tasks. Every
// worker computes the same split from the same partitions.
func SplitPartitions(parts []connect.TopicPartition, tasks int) [][]connect.TopicPartition {
	if tasks <= 0 {
		return nil
	}
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, compareTP)
	sorted = slices.Compact(sorted)
	out := make([][]connect.TopicPartition, tasks)
	for i, tp := range sorted {
		out[i%tasks] = append(out[i%tasks], tp)
	}
	return out
}

func compareTP(a, b connect.TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
