// Package fsm is kcd's replicated state machine: the metadata key space of
// package store kept in a bbolt file, changed only by committed Raft entries.
//
// # How the Raft node uses it
//
//  1. A write request becomes a Command (with a request ID the proposer
//     chooses), is checked with Command.Validate, encoded with EncodeCommand
//     and proposed: alone, or with the commands proposed at the same time
//     in one entry (AppendGroup), which applies like entries of their own.
//  2. Every committed entry, in log order, is handed to FSM.Apply as an Entry.
//     Entries that are not commands (the leader's empty entry, configuration
//     changes) are passed too, with nil Data: they only advance the applied
//     index, and Apply refuses a gap in the indexes.
//  3. Apply returns one Result per command, carrying the request ID, so the
//     node can answer the caller that waits for it.
//  4. Reads (Get, Scan, Revision) and watches are served from the file.
//     Linearizable reads wait, on the Raft side, for AppliedIndex to reach the
//     read index before calling them.
//  5. Snapshot gives the whole file together with the index and term it
//     contains; Restore replaces the state with one.
//
// # What is guaranteed
//
// Apply commits all its entries and the new applied index in one bbolt
// read-write transaction, with bbolt's fsync on commit (with
// Options.CommitInterval the transaction stays open for the next Applies
// and is committed when due; reads see it meanwhile). After a crash the
// file holds either all of a call or none of it, and the applied index says
// which; entries at or below it are skipped, so replaying the log after a
// restart is harmless.
//
// With Options.NoSync (what the Raft node uses) the commit is not synced:
// the same holds after a crash of the process, since the page cache keeps
// every commit, but not after a crash of the machine. Open therefore records
// the boot id beside the file before the first such commit and refuses the
// file in a later boot (ErrUnsynced) unless a clean Close synced it; the
// node then rebuilds the state from its durable snapshot and log.
//
// The state is a function of the log alone: whatever the node's timing or
// how the entries were split into Apply calls, the same entries give the same
// keys, values, revisions and history on every node. Two things keep it so:
// invalid commands fail the same way everywhere (they are still applied, as
// no-ops, so the index advances), and history is compacted per revision, not
// per transaction. The one input besides the log is Options.HistoryRetain,
// which every member of a cluster must therefore share.
//
// Revisions follow package store: the store-wide revision grows by one per
// Put, per Delete that removed a key, and per Batch whose conditions held and
// that changed something. Every revision's events are kept in a history
// bucket for watchers, in one record per Raft entry (a group of commands
// proposed together makes many revisions and costs one write); the oldest
// revisions are trimmed as new ones arrive (at most compactStep per
// revision, so no transaction pays for a large backlog), a record going once
// all of its revisions are, and a KindCompact command trims them up to a
// given revision at once.
//
// # Buckets
//
//	kv       key → 8-byte create revision, 8-byte mod revision, value
//	history  8-byte last revision of an entry → the events of each of its revisions
//	dedup    8-byte chunk number → the results of 64 commands in log order:
//	         8-byte request id, 8-byte index, 8-byte revision, flags
//	meta     format version, applied index and term, revision, compacted
//	         revision, sequence of the oldest remembered command
//
// The ids of the last DedupRetain commands are also kept in memory, in log
// order, rebuilt from the dedup bucket at Open: Apply looks them up there,
// and writes their chunks once per call rather than a record per command.
// The keys of the history records are kept in memory too, for trimming.
// Files of formats 2 and 3 (a history record per revision, an ids record
// per command keyed by its id) are converted at Open, and so are snapshots
// of them.
//
// All integers in keys and record headers are big-endian, so that bbolt's
// byte order is numeric order.
//
// # Damage
//
// bbolt keeps no checksum of pages or values and panics on a damaged page.
// Open therefore walks every page in use, bounds checked, before bbolt
// opens the file, and fails with an error wrapping ErrDamaged; panics of
// bbolt on later reads, applies and commits are recovered into the same
// error. A changed value is found by comparing members: HashView hashes
// the key space as of an applied index, and Fence makes a state that
// differs from the majority's refuse reads.
//
// Local wraps one FSM as a single-process store.Store, with no Raft; it is
// what the tests run the store conformance suite against and the model for
// the Raft backend.
package fsm
