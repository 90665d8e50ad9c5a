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
