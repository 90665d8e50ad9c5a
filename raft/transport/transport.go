package transport

import (
	"context"
	"net/http"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
)

// Transport carries raft messages between the members of one cluster.
type Transport interface {
	// Send queues msgs for their destinations (msg.To) and never blocks on
	// the network. The transport owns the messages from then on: the caller
	// must not modify them.
	Send(msgs []*raftpb.Message)
	// AddPeer makes id reachable at url (e.g. http://127.0.0.1:7001 or
	// https://...). Adding a known id updates its url.
	AddPeer(id uint64, url string)
	// RemovePeer forgets id and drops whatever is still queued for it.
	RemovePeer(id uint64)
	// UpdatePeer points id at a new url, keeping its queue and counters.
	UpdatePeer(id uint64, url string)
	// Handler serves incoming peer traffic; the node mounts it (path prefix
	// /raft/) on its peer listener.
	Handler() http.Handler
	// Stats reports, per known peer, reachability, last contact, queue
	// length and drop counts.
	Stats() map[uint64]PeerStats
	// Close stops every goroutine of the transport and waits for them.
	Close() error
}

// Receiver is what the transport delivers to (the raft node implements it).
type Receiver interface {
	// Process hands an incoming message to raft (node.Step).
	Process(ctx context.Context, m *raftpb.Message) error
	ReportUnreachable(id uint64)
	ReportSnapshot(id uint64, status raft.SnapshotStatus)
	// IsIDRemoved reports whether id was removed from the cluster; such a
	// member must not be heard any more.
	IsIDRemoved(id uint64) bool
}

// PeerStats is what a transport knows of one peer.
type PeerStats struct {
	// Reachable is true while a connection to the peer works: false before
	// the first one and from a failed send until a send succeeds again.
	Reachable bool
	// LastContact is when a send to the peer last succeeded (zero: never).
	LastContact time.Time
	// QueueLen and QueueBytes count messages held for the peer, including
	// the batch being written.
	QueueLen   int
	QueueBytes int
	// Sent counts messages handed to the network; Dropped those discarded
	// because the queue was full, the message too big or the peer unknown.
	Sent    uint64
	Dropped uint64
	// LastError is the latest send failure ("" after a success).
	LastError string
}
