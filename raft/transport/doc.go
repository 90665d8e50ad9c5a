// Package transport carries raft messages between the members of a kcd
// cluster: HTTP, the production transport over HTTP/2, and Network, an
// in-memory network with fault injection for in-process multi-node tests.
// Both implement Transport and deliver to a Receiver (the raft node).
//
// # Wiring
//
//	t, err := transport.NewHTTP(transport.Config{ID: id, ClusterID: cid, Receiver: node})
//	srv := &http.Server{Handler: mux}
//	t.ConfigureServer(srv)            // HTTP/2 (h2c or TLS), no whole-request timeouts
//	mux.Handle("/raft/", t.Handler())
//	for _, m := range members { t.AddPeer(m.ID, m.PeerURL) }
//	...
//	t.Send(rd.Messages)               // from the Ready loop; never blocks
//	...
//	node.Stop(); t.Close(); srv.Shutdown(ctx)
//
// Receiver methods are called from the transport's goroutines and may block
// (node.Step does until the raft loop takes the message); they must not wait
// for the goroutine that calls Close.
//
// # Sending
//
// Each peer has a queue bounded by Config.MaxQueueMsgs (4096) and
// MaxQueueBytes (64 MiB), counting the batch being written. Send only
// enqueues: a message that does not fit is dropped, counted in Stats and
// reported with ReportUnreachable; raft resends from its progress tracking.
// A sender goroutine per peer drains the queue, one batch per wake-up, into
// a long-lived HTTP/2 stream and flushes when the queue is empty, so batches
// grow with load by themselves.
//
// A stream rather than a POST per batch: on loopback both moved about as
// many small messages per second, but one message's delivery took ~30 µs on
// a stream against ~300 µs with a request each, and that latency is paid on
// every commit.
//
// MsgSnap does not use the stream: each snapshot is its own POST, answered
// once raft has taken it, so that the outcome can be reported
// (ReportSnapshot: SnapshotFinish or SnapshotFailure) and a large snapshot
// does not delay heartbeats. One snapshot per peer may wait while another is
// sent; more are refused and reported as failures (raft asks again).
//
// # Failures
//
// On a failed send the peer is marked unreachable (Stats), raft is told
// (ReportUnreachable), what is queued is discarded as stale (counted as
// dropped) and the sender reconnects after a backoff of 50 ms doubling to
// 1 s. A refused connection is noticed at once; a peer that accepts but does
// not answer after Config.OpenTimeout (1 s); a stream that stops moving
// after WriteTimeout (5 s) or, idle, by HTTP/2 pings (2 s + 2 s). Messages
// are delivered in order per peer while a stream lives; across a reconnect a
// few may be lost or overtaken, which raft tolerates.
//
// # Wire format and checks
//
// POST /raft/stream (HTTP/2 only: the request body is a full-duplex stream)
// and POST /raft/snapshot carry frames: a 4-byte big-endian length, then a
// proto.Marshal'd raftpb.Message. Every request names the cluster and both
// ends in headers. The receiver refuses another cluster's requests or a
// request meant for another member (412), a removed member (410, checked
// again for every message), cleartext when it has ServerTLS (403), a verified
// client certificate that is not valid for the host of the sender's peer URL
// as the receiver knows it (403: under mutual TLS a member cannot send as
// another) and a frame above its MaxFrameBytes; the sender also checks the cluster id of the
// answer. On a stream that was already accepted, the refusal is the text of
// the response body, which the sender logs and shows in Stats.LastError.
//
// # Limits
//
// Config.MaxFrameBytes (default 64 MiB) bounds one message in both
// directions, and so a whole snapshot: a larger snapshot fails with
// SnapshotFailure and an error log, until snapshots are sent in chunks.
// Every member should use the same value. Memory per peer is bounded by
// MaxQueueBytes plus two snapshots (one waiting, one being sent, with its
// encoding) plus 64 KiB buffers; per incoming stream by a 64 KiB read buffer
// plus one frame, allocated as its bytes arrive (up to 1.5 times its size),
// so a header that announces more than the peer sends costs nothing.
package transport
