// Package logstore is kcd's durable Raft log: a small segmented write-ahead
// log plus snapshot files, exposed to go.etcd.io/raft/v3 as a raft.Storage.
//
// The whole un-compacted log is also kept in a raft.MemoryStorage so raft's
// reads never touch the disk; memory stays bounded because the node takes a
// snapshot and calls Compact every N applied entries.
//
// # Directory layout
//
//	0000000000000001-0000000000000001.wal       WAL segment <seq>-<first index> (hex)
//	0000000000000064-0000000000000005.snap      snapshot metadata <index>-<term> (hex)
//	0000000000000064-0000000000000005.snapdata  that snapshot's Data (optional)
//
// Segment sequence numbers are contiguous; a missing one is corruption. The
// first index in a segment's name is the log's last index + 1 when the
// segment was started: every entry of the previous segment that is still
// live is below it, which is what lets Compact delete whole segments.
// Segments are preallocated to Options.SegmentSize (fallocate on Linux, so
// fdatasync does not have to journal a growing file size) and trimmed to
// their used length when the next segment is started.
//
// # Records
//
// WAL segments, snapshot metadata files and snapshot data files all consist
// of records:
//
//	offset 0  uint32 little endian  payload length n, 1 <= n < 2 GiB
//	offset 4  uint8                 record type
//	offset 5  uint32 little endian  CRC-32C (Castagnoli) of the type byte and the payload
//	offset 9  n bytes               payload
//
// Payloads are protobuf-encoded raftpb messages (Entry, HardState,
// SnapshotMetadata), except in data files, which hold the raw snapshot Data.
// A record never spans two segments. An all-zero header marks the end of the
// data (the rest of a preallocated segment is zero).
//
// The CRC is deliberately not chained from record to record: each record can
// be verified on its own, so after a bad record recovery can ask whether any
// valid record follows it. If none does, the bad bytes are the torn tail of
// the last, unacknowledged write; if one does, the damage is in data that
// was already acknowledged. The order of records is protected instead by
// semantic checks: contiguous segment numbers and entry indexes.
//
// # WAL record types
//
//   - entry (raftpb.Entry): appended to the log. An entry whose index is at
//     or below the current last index first truncates the conflicting
//     suffix, exactly as raft requires.
//   - hard state (raftpb.HardState): the last one wins. Every new segment
//     starts with the current hard state, so deleting old segments can never
//     lose term and vote.
//   - reset (raftpb.SnapshotMetadata): a snapshot received from the leader
//     replaced the log; entries written before it are stale and dropped on
//     replay. Without this, an uncommitted suffix from an old term would come
//     back after a restart and could make this node vote for a candidate that
//     lacks committed entries.
//
// # Snapshots
//
// A snapshot is written as data file first, then metadata file, each as a
// temporary file that is fsynced, renamed and followed by a directory fsync.
// Snapshots made locally (CreateSnapshot) are valid once their metadata file
// exists. Snapshots received through Save are only valid once the WAL holds
// the matching reset record: a crash between the two leaves a metadata file
// that recovery discards, falling back to the previous snapshot, because
// that Save never returned.
//
// # Recovery
//
// Open replays every segment. A bad record at the end of the last segment
// (partial, zero-filled or CRC-bad, with no valid record after it) is a torn
// write and is truncated with a warning. A bad or impossible record anywhere
// else is reported as an error wrapping ErrCorrupt that names the file and
// the offset; nothing is dropped silently. After replay the log holds the
// newest valid snapshot followed by the WAL entries above its index.
package logstore
