package daemon

import "golang.org/x/sys/unix"

// fdHeadroom is what the node keeps of its file descriptor limit for
// everything but REST connections: the Raft log and peers, bbolt, Kafka
// connections, workers' files.
const fdHeadroom = 256

// restMaxConnections is rest-max-connections, lowered when the process's
// file descriptor limit would run out first.
func (n *Node) restMaxConnections() int {
	want := n.cfg.RESTMaxConnections
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > uint64(want+fdHeadroom) {
		return want
	}
	got := max(16, int(lim.Cur)-fdHeadroom)
	n.log.Warn("rest-max-connections lowered below the open file limit", "rest_max_connections", want, "open_file_limit", lim.Cur, "now", got)
	return got
}
