// Package raft is kcd's consensus layer: a node around go.etcd.io/raft/v3
// that keeps its log durably (raft/logstore), talks to its peers
// (raft/transport) and applies committed commands to a replicated state
// machine in bbolt (raft/fsm).
//
// The Ready loop follows the library's contract: each Ready's hard state,
// entries and snapshot are saved with one fsync before its messages are sent
// and before Advance; committed entries are applied in order, configuration
// changes through ApplyConfChange. Proposals from many callers share Ready
// batches, and so share fsyncs and bbolt transactions.
//
// Reads that must be linearizable go through ReadIndex, batched so that many
// concurrent readers share one round of heartbeats.
//
// A node refuses to start on a data dir it cannot trust: a log that ends
// before the applied index or the commit, a damaged log or state file. The
// members compare hashes of their states at the same log index
// periodically (corruption.go); a member that differs from the majority
// stops serving.
package raft
