package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/top"
)

// newTopCmd is `kcctl top`: the live dashboard (tui/top), fed by the
// current context's server and the cluster's other members.
func newTopCmd(g *globals) *cobra.Command {
	var readOnly bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Live dashboard: leader, members, workers, connectors, rebalances",
		Long: `top shows the cluster live: the Raft leader and term, the members, each
worker's tasks by state, the connectors (failures first) and the latest
rebalances. It follows the server's event stream and polls every
--interval; when the server dies it moves to another member of the cluster.
Keys: ? for help, q to quit. NO_COLOR (any value) turns colour off.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if interval < 100*time.Millisecond {
				return &usageError{fmt.Errorf("--interval must be at least 100ms, got %s", interval)}
			}
			out, ok := c.OutOrStdout().(*os.File)
			if !ok || !term.IsTerminal(out.Fd()) {
				return &usageError{errors.New("kcctl top needs a terminal, and its output is not one: for plain output use kcctl get connectors, kcctl get workers or kcctl cluster status")}
			}
			// The feed picks the server itself (the context's servers, then
			// the members it learns), so its clients have no fallbacks.
			opts := g.conn.opts
			servers := append([]string{g.conn.server}, opts.Fallbacks...)
			opts.Fallbacks = nil
			clientFor := func(url string) *client.Client { return client.NewWithOptions(url, opts) }
			feed := top.NewFeed(top.FeedConfig{Servers: servers, Client: clientFor, Interval: interval})
			ctxName := g.context
			if cc, err := loadContext(g.context); err == nil && cc != nil {
				ctxName = cc.Name
			}
			model := newTopModel(feed.Backend(), readOnly, os.Getenv("NO_COLOR") != "", ctxName)
			ctx, cancel := context.WithCancel(c.Context())
			defer cancel()
			p := tea.NewProgram(model, tea.WithContext(ctx), tea.WithOutput(out))
			var wg sync.WaitGroup
			wg.Go(func() { feed.Run(ctx, func(m any) { p.Send(m) }) })
			_, err := p.Run()
			cancel()
			wg.Wait()
			if errors.Is(err, tea.ErrProgramKilled) && c.Context().Err() != nil {
				return c.Context().Err() // interrupted: exit 130
			}
			if errors.Is(err, tea.ErrInterrupted) {
				return context.Canceled
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&readOnly, "readonly", false, "Disable the keys that change the cluster (restart, pause, resume)")
	cmd.Flags().DurationVar(&interval, "interval", top.DefaultInterval, "Time between polls (events arrive as they happen)")
	return cmd
}

// newTopModel is the dashboard's model (tui/top) with kcctl's settings.
func newTopModel(b top.Backend, readOnly, noColor bool, context string) tea.Model {
	return top.New(top.Options{Backend: b, ReadOnly: readOnly, NoColor: noColor, Context: context, Now: time.Now})
}
