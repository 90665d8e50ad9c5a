package api

// ClusterInfo is the body of GET /kcd/v1/cluster.
type ClusterInfo struct {
	ClusterID string `json:"cluster_id"`
	// Self is the member that answered (on a worker-only node: the Raft
	// node it asked).
	Self        uint64       `json:"self"`
	Leader      uint64       `json:"leader"`
	Term        uint64       `json:"term"`
	CommitIndex uint64       `json:"commit_index"`
	Members     []MemberInfo `json:"members"`
	// ReachabilityFrom is the member whose view the members' reachability
	// is: the leader's, which talks to every member, whenever it could be
	// asked; else Self's, which marks what it cannot know as unknown.
	ReachabilityFrom uint64        `json:"reachability_from"`
	Health           ClusterHealth `json:"health"`
	// Alarms are the corruption alarms this node knows of (omitted: none);
	// Health.Alarms has their messages.
	Alarms []CorruptionAlarm `json:"alarms,omitempty"`
}

// CorruptionAlarm is a member whose state differs from the majority's, as
// the Raft members' periodic hash comparison found (member 0: the states
// differ and no majority says which is right).
type CorruptionAlarm struct {
	Member   uint64 `json:"member"`
	Index    uint64 `json:"index"`
	Revision int64  `json:"revision"`
	Message  string `json:"message"`
}

// ClusterHealth sums up the Raft group: whether a quorum of voters is up
// and any alarm raised.
type ClusterHealth struct {
	Voters int `json:"voters"`
	// VotersUp counts the voters known reachable (the leader included).
	VotersUp int `json:"voters_up"`
	// Quorum is how many voters must be up for the group to work.
	Quorum int `json:"quorum"`
	// QuorumOK: there is a leader and a quorum of voters is known up.
	QuorumOK bool     `json:"quorum_ok"`
	Alarms   []string `json:"alarms"`
}

// The reachability of a member.
const (
	Reachable   = "reachable"
	Unreachable = "unreachable"
	// Unknown: the node that answered does not talk to the member (a
	// follower talks only to the leader) and could not ask the leader.
	Unknown = "unknown"
)

// MemberInfo is one member in ClusterInfo.
type MemberInfo struct {
	ID      uint64   `json:"id"`
	RESTURL string   `json:"rest_url"`
	PeerURL string   `json:"peer_url"`
	Roles   []string `json:"roles"`
	Raft    string   `json:"raft"` // voter, learner or none
	// Reachability is reachable, unreachable or unknown, as the member
	// ReachabilityFrom sees it; Reachable is true when it is reachable.
	Reachability string `json:"reachability"`
	Reachable    bool   `json:"reachable"`
	// LastContactMS is how long ago the node that answered last reached
	// the member; null for the node itself and for members never reached.
	LastContactMS *int64 `json:"last_contact_ms"`
}

// NewMember is the body of POST /kcd/v1/cluster/members.
type NewMember struct {
	ID      uint64   `json:"id"`
	PeerURL string   `json:"peer_url"`
	RESTURL string   `json:"rest_url,omitempty"`
	Roles   []string `json:"roles,omitempty"`
	// JoinToken is the cluster's join credential; a member is added only
	// with it (401 without, 403 wrong).
	JoinToken string `json:"join_token,omitempty"`
}

// LeaderTransfer is the body of POST /kcd/v1/cluster/leader, in and out.
type LeaderTransfer struct {
	To     uint64 `json:"to,omitempty"`
	Leader uint64 `json:"leader,omitempty"`
}
