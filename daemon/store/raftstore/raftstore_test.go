package raftstore

import (
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/store"
	"github.com/kcd-project/kcd/daemon/store/storetest"
	"github.com/kcd-project/kcd/raft/rafttest"
)

// The conformance suite against a follower of a three-node cluster: its
// writes go through the leader, its reads need the ReadIndex barrier.
func TestConformanceOnFollower(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		c := rafttest.NewCluster(t, 3, nil)
		c.Leader(5 * time.Second)
		return New(c.Follower())
	})
}

// And against a single-node cluster, where the node leads itself.
func TestConformanceSingleNode(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		c := rafttest.NewCluster(t, 1, nil)
		return New(c.Leader(5 * time.Second))
	})
}
