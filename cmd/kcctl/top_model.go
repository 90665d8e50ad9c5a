//go:build topmodel

// At merge with tui/top's model: delete top_placeholder.go and this build
// constraint.

package main

import (
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/kcd-project/kcd/tui/top"
)

func newTopModel(b top.Backend, readOnly, noColor bool, context string) tea.Model {
	return top.New(top.Options{Backend: b, ReadOnly: readOnly, NoColor: noColor, Context: context, Now: time.Now})
}
