package raft

import "context"

// CampaignDecided tells whether campaignIfAlone has decided.
func (n *Node) CampaignDecided() bool { return !n.campaignNow.Load() }

// AloneCampaigns is how many elections campaignIfAlone started.
func (n *Node) AloneCampaigns() uint64 { return n.aloneCampaigns.Load() }

// Campaign starts an election on this node, as its election timer would.
func (n *Node) Campaign(ctx context.Context) error { return n.rn.Campaign(ctx) }

// ReadIndexPending is how many ReadIndex requests wait for an answer.
func (n *Node) ReadIndexPending() int {
	n.reads.mu.Lock()
	defer n.reads.mu.Unlock()
	return len(n.reads.pending)
}

// SetAsyncSnapshotFrom sets the size of the last snapshot from which the
// next is written off the Ready loop, and returns the previous one.
func SetAsyncSnapshotFrom(b uint64) uint64 {
	return asyncSnapshotFrom.Swap(b)
}
