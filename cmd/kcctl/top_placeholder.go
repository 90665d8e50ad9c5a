//go:build !topmodel

package main

// A stand-in for tui/top's model (top.New) until it is merged: it shows
// the leader, the workers and each connector's tasks, as text. The lead
// deletes this file at merge, and the build constraint of top_model.go,
// whose newTopModel calls top.New.

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/kcd-project/kcd/tui/top"
)

func newTopModel(b top.Backend, readOnly, noColor bool, context string) tea.Model {
	return &placeholderTop{context: context}
}

type placeholderTop struct {
	context string
	seq     uint64
	snap    top.Snapshot
	state   top.FeedStateMsg
}

func (m *placeholderTop) Init() tea.Cmd { return nil }

func (m *placeholderTop) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if msg.String() == "q" || msg.String() == "ctrl+c" {
			return m, tea.Quit
		}
	case top.SnapshotMsg:
		if msg.Seq > m.seq {
			m.seq, m.snap = msg.Seq, msg.Snapshot
		}
	case top.StatusMsg:
		for i := range m.snap.Connectors {
			c := &m.snap.Connectors[i]
			if c.Name != msg.Connector {
				continue
			}
			if msg.Task < 0 {
				c.State, c.WorkerID = msg.State, msg.WorkerID
			}
			for j := range c.Tasks {
				if c.Tasks[j].ID == msg.Task {
					c.Tasks[j].State, c.Tasks[j].WorkerID = msg.State, msg.WorkerID
				}
			}
		}
	case top.LeaderMsg:
		m.snap.Cluster.Leader, m.snap.Cluster.Term = msg.Leader, msg.Term
	case top.FeedStateMsg:
		m.state = msg
	}
	return m, nil
}

func (m *placeholderTop) View() tea.View {
	var b strings.Builder
	s := m.snap
	fmt.Fprintf(&b, "cluster %s  leader %d  term %d  store %s  feed live=%v polling=%v err=%v\n",
		s.Cluster.ID, s.Cluster.Leader, s.Cluster.Term, s.Cluster.Store, m.state.Live, m.state.Polling, m.state.Err)
	running := map[string]int{}
	for _, c := range s.Connectors {
		for _, t := range c.Tasks {
			if t.State == "RUNNING" {
				running[t.WorkerID]++
			}
		}
	}
	for _, w := range s.Workers {
		fmt.Fprintf(&b, "worker %s alive=%v running %d\n", w.ID, w.Alive, running[w.ID])
	}
	for _, c := range s.Connectors {
		fmt.Fprintf(&b, "connector %s %s\n", c.Name, c.State)
		for _, t := range c.Tasks {
			fmt.Fprintf(&b, "  task %d %s %s\n", t.ID, t.State, t.WorkerID)
		}
	}
	v := tea.NewView(b.String())
	v.AltScreen = true
	return v
}
