// Package coordinator spreads connectors and tasks over the workers of a
// kcd cluster. The Coordinator runs on the Raft leader only, one at a time:
// it keeps the worker sessions (registration, heartbeats, expiry), computes
// the assignment with the assignor, and writes it to the store, so that a
// new leader resumes from it. The Member runs on every worker: it
// heartbeats the coordinator, follows the stored assignment, and tells the
// worker what to run and under which fence.
//
// Safety rests on four rules:
//   - A unit (a connector instance or a task) is owned through its owner
//     key. Statuses, offsets and task configs are written under a fence on
//     that key (connectstore.Fence), so a worker whose unit moved on cannot
//     write any more.
//   - A unit moves off a live worker in two steps: the coordinator writes a
//     revoke, the worker stops the unit and says so in a heartbeat that
//     has seen the revoke, and only then does the owner key change.
//   - A worker that has had no heartbeat answered for SessionTimeout stops
//     everything by itself; the coordinator expires its session only after
//     SessionTimeout plus FenceMargin without a heartbeat, and a new
//     coordinator starts every session afresh. So a cut-off worker has
//     stopped its units before they are handed to another.
//   - A worker whose session lapsed runs nothing again until the
//     coordinator has confirmed that it counts the worker in the stored
//     assignment, and the worker has read that assignment at the revision
//     of the confirmation or later: what it knew before may be stale.
package coordinator

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/coordinator/assignor"
)

// Store keys of the coordinator.
const (
	// KeyPrefix holds everything of the coordinator.
	KeyPrefix = "kcd/"
	// AssignPrefix holds owners and revokes; Members watch it.
	AssignPrefix = "kcd/assign/"
	ownerPrefix  = AssignPrefix + "owner/"
	revokePrefix = AssignPrefix + "revoke/"
	// WorkerPrefix holds a record per worker with a live session.
	WorkerPrefix = "kcd/workers/"
	// SettingsPrefix holds per-worker settings an operator changed
	// (weight, drain); they outlive sessions.
	SettingsPrefix = "kcd/worker-settings/"
	// RebalancePrefix holds the rebalance journal, one key per generation.
	RebalancePrefix = "kcd/rebalances/"
	// EpochKey holds the coordinator's epoch: term and generation.
	EpochKey = "kcd/coordinator"
)

// Unit is one thing to run: a connector instance (Task -1) or a task.
type Unit = assignor.Unit

func unitPath(u Unit) string {
	if u.Task < 0 {
		return url.PathEscape(u.Connector) + "/connector"
	}
	return url.PathEscape(u.Connector) + "/" + strconv.Itoa(u.Task)
}

// OwnerKey is the key whose ModRevision fences the unit's writes.
func OwnerKey(u Unit) string  { return ownerPrefix + unitPath(u) }
func revokeKey(u Unit) string { return revokePrefix + unitPath(u) }

// ParseUnitKey returns the unit of an owner or revoke key.
func ParseUnitKey(key string) (u Unit, revoke, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(key, ownerPrefix):
		rest = key[len(ownerPrefix):]
	case strings.HasPrefix(key, revokePrefix):
		rest, revoke = key[len(revokePrefix):], true
	default:
		return Unit{}, false, false
	}
	i := strings.LastIndexByte(rest, '/')
	if i < 0 {
		return Unit{}, false, false
	}
	name, err := url.PathUnescape(rest[:i])
	if err != nil {
		return Unit{}, false, false
	}
	if rest[i+1:] == "connector" {
		return Unit{Connector: name, Task: -1}, revoke, true
	}
	id, err := strconv.Atoi(rest[i+1:])
	if err != nil || id < 0 {
		return Unit{}, false, false
	}
	return Unit{Connector: name, Task: id}, revoke, true
}

// Epoch says which coordinator made an assignment (see package api).
type Epoch = api.Epoch

// Owner is the value of an owner key.
type Owner struct {
	Worker string `json:"worker"`
	Epoch  Epoch  `json:"epoch"`
}

// Revoke is the value of a revoke key: the unit is to leave From for To.
type Revoke struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Epoch Epoch  `json:"epoch"`
}

// Settings, Move and Rebalance are the worker settings and the rebalance
// journal as the API shows them (see package api).
type (
	Settings  = api.Settings
	Move      = api.Move
	Rebalance = api.Rebalance
)

func rebalanceKey(gen int64) string { return fmt.Sprintf("%s%020d", RebalancePrefix, gen) }

// WorkerInfo, Heartbeat and HeartbeatReply are the body and the answer
// of POST /kcd/v1/workers/{id}/heartbeat (see package api); WorkerInfo is
// also the record of a worker with a live session.
type (
	WorkerInfo     = api.WorkerInfo
	Heartbeat      = api.Heartbeat
	HeartbeatReply = api.HeartbeatReply
)
